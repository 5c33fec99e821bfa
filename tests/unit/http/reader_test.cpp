// The sans-I/O core: requests out of bytes, whatever the reads' boundaries.
// Every conformance case is fed whole, then split at every byte (two
// feeds), then one byte at a time: the result must not depend on where the
// kernel cut the stream.
#include <herd/http/reader.hpp>
#include <herd/http/response.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using herd::http::limits;
using herd::http::request;
using herd::http::request_reader;
using ev = herd::http::request_reader::event;

namespace {

struct outcome {
  std::vector<request> requests;
  int heads = 0;
  int error = 0;  // the status, when the reader failed
};

void drain(request_reader& r, outcome& o) {
  for (;;) {
    switch (r.next()) {
      case ev::need_more: return;
      case ev::head: ++o.heads; break;
      case ev::request: o.requests.push_back(r.take()); break;
      case ev::error: o.error = r.error_status(); return;
    }
  }
}

outcome feed_in_pieces(std::string_view bytes, const std::vector<std::size_t>& cuts, limits l = {}) {
  request_reader r(l);
  outcome o;
  std::size_t at = 0;
  for (std::size_t c : cuts) {
    r.feed(bytes.substr(at, c - at));
    drain(r, o);
    at = c;
  }
  r.feed(bytes.substr(at));
  drain(r, o);
  return o;
}

bool same(const outcome& a, const outcome& b) {
  if (a.error != b.error || a.requests.size() != b.requests.size() || a.heads != b.heads) return false;
  for (std::size_t i = 0; i < a.requests.size(); ++i) {
    const request &x = a.requests[i], &y = b.requests[i];
    if (x.method != y.method || x.target != y.target || x.body != y.body || x.headers.size() != y.headers.size())
      return false;
  }
  return true;
}

// Whole, then cut at every byte, then a byte at a time: all the same.
outcome every_split(std::string_view bytes, limits l = {}) {
  outcome whole = feed_in_pieces(bytes, {}, l);
  for (std::size_t cut = 1; cut < bytes.size(); ++cut) {
    outcome o = feed_in_pieces(bytes, {cut}, l);
    INFO("cut at byte " << cut);
    REQUIRE(same(whole, o));
  }
  std::vector<std::size_t> all;
  for (std::size_t i = 1; i < bytes.size(); ++i) all.push_back(i);
  REQUIRE(same(whole, feed_in_pieces(bytes, all, l)));
  return whole;
}

}  // namespace

TEST_CASE("reader: pipelined requests come out in order, whatever the read boundaries", "[http][reader]") {
  std::string bytes =
      "GET /a?x=1 HTTP/1.1\r\nHost: h\r\n\r\n"
      "POST /push/user/7 HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"
      "GET /c HTTP/1.0\r\n\r\n";
  outcome o = every_split(bytes);
  REQUIRE(o.error == 0);
  REQUIRE(o.requests.size() == 3);
  CHECK(o.heads == 3);
  CHECK(o.requests[0].method == "GET");
  CHECK(o.requests[0].path == "/a");
  CHECK(o.requests[0].query == "x=1");
  CHECK(*o.requests[0].find("host") == "h");
  CHECK(o.requests[1].body == "hello");
  CHECK(o.requests[1].path == "/push/user/7");
  CHECK(o.requests[2].version_minor == 0);
  CHECK_FALSE(herd::http::keep_alive(o.requests[2]));
  CHECK(herd::http::keep_alive(o.requests[0]));
}

TEST_CASE("reader: a chunked body with extensions and trailers is decoded, trailers dropped", "[http][reader]") {
  std::string bytes =
      "POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;name=value\r\nhello\r\n"
      "6\r\n world\r\n"
      "0\r\nX-Trailer: t\r\n\r\n"
      "GET /next HTTP/1.1\r\n\r\n";
  outcome o = every_split(bytes);
  REQUIRE(o.error == 0);
  REQUIRE(o.requests.size() == 2);
  CHECK(o.requests[0].body == "hello world");
  CHECK_FALSE(o.requests[0].find("X-Trailer"));
  CHECK(o.requests[1].path == "/next");
}

TEST_CASE("reader: limits and malformed input give the right status", "[http][reader]") {
  limits small{.max_head = 256, .max_body = 16};
  SECTION("a head over the limit: 431") {
    std::string bytes = "GET / HTTP/1.1\r\nX-Big: " + std::string(400, 'a') + "\r\n\r\n";
    CHECK(every_split(bytes, small).error == 431);
  }
  SECTION("the head limit is exact, wherever the reads are cut (found by the fuzzer)") {
    auto head_of = [](std::size_t total) {
      return "GET / HTTP/1.1\r\nX: " + std::string(total - 23, 'a') + "\r\n\r\n";
    };
    REQUIRE(head_of(256).size() == 256);
    CHECK(every_split(head_of(256), small).requests.size() == 1);
    CHECK(every_split(head_of(257), small).error == 431);
    CHECK(every_split(head_of(262), small).error == 431);
  }
  SECTION("a head over the limit that never ends: 431 without waiting for its end") {
    std::string bytes = "GET / HTTP/1.1\r\nX-Big: " + std::string(400, 'a');
    CHECK(feed_in_pieces(bytes, {}, small).error == 431);
  }
  SECTION("a Content-Length over the limit: 413 before the body arrives") {
    CHECK(every_split("POST / HTTP/1.1\r\nContent-Length: 17\r\n\r\n", small).error == 413);
  }
  SECTION("a chunked body over the limit: 413") {
    CHECK(every_split("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n1\r\nx\r\n0\r\n\r\n",
                      small)
              .error == 413);
  }
  SECTION("malformed request lines and headers: 400") {
    CHECK(every_split("GARBAGE\r\n\r\n").error == 400);
    CHECK(every_split("GET / HTTP/1.1\r\nNo colon here\r\n\r\n").error == 400);
    CHECK(every_split("GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n").error == 400);
    CHECK(every_split("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n").error == 400);
  }
  SECTION("request smuggling shapes: 400") {
    CHECK(every_split("POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n").error == 400);
    CHECK(every_split("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n").error == 400);
    CHECK(every_split("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab").error == 400);
  }
  SECTION("HTTP/2.0 on the request line: 505") { CHECK(every_split("GET / HTTP/2.0\r\n\r\n").error == 505); }
  SECTION("a request line with a space in its target is malformed, not a version: 400 (found by the fuzzer)") {
    CHECK(every_split("POST /a/b: cET /c HTTP/1.1\r\nH\r\n6: h\r\n\r\n").error == 400);
    CHECK(every_split("GET / HTTP/1.1M\r\n\r\n").error == 400);
  }
  SECTION("requests before the bad one still come out") {
    outcome o = every_split("GET /ok HTTP/1.1\r\n\r\nBAD\r\n\r\n");
    CHECK(o.requests.size() == 1);
    CHECK(o.error == 400);
  }
}

TEST_CASE("reader: head is reported before the body, for 100-continue", "[http][reader]") {
  request_reader r;
  r.feed("POST /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n");
  REQUIRE(r.next() == ev::head);
  CHECK(herd::http::expects_continue(r.current()));
  CHECK(r.body_expected());
  CHECK(r.next() == ev::need_more);
  CHECK_FALSE(r.idle());
  r.feed("abc");
  REQUIRE(r.next() == ev::request);
  CHECK(r.take().body == "abc");
  CHECK(r.idle());
}

TEST_CASE("reader: the bytes after an upgrade request are handed over, and an idle reader frees its buffer", "[http][reader]") {
  request_reader r;
  r.feed("GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x85" "frame");
  REQUIRE(r.next() == ev::head);
  REQUIRE(r.next() == ev::request);
  CHECK(r.take().path == "/ws");
  CHECK(r.take_rest() == "\x81\x85" "frame");
  CHECK(r.idle());
  r.shrink();
  CHECK(r.idle());
  CHECK(r.next() == ev::need_more);
  r.feed("GET / HTTP/1.1\r\n");
  CHECK(r.next() == ev::need_more);
  CHECK(r.head_in_progress());
}

TEST_CASE("response writer frames bodies with Content-Length or chunks and owns the framing headers", "[http][response]") {
  std::string out;
  auto resp = herd::http::response::text(200, "ok").set("Content-Length", "999").set("Connection", "upgrade");
  herd::http::write_response(out, resp, {});
  CHECK(out == "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 2\r\n\r\nok");
  out.clear();
  resp.chunked = true;
  herd::http::write_response(out, resp, {.keep_alive = false});
  CHECK(out ==
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"
        "Transfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n");
  out.clear();
  herd::http::write_response(out, resp, {.version_minor = 0});  // HTTP/1.0 cannot read chunks
  CHECK(out == "HTTP/1.0 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok");
  out.clear();
  herd::http::write_response(out, herd::http::response::text(204, ""), {.head = true});
  CHECK(out == "HTTP/1.1 204 No Content\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n");
}

TEST_CASE("reader: next() again with only a last chunk's first bytes buffered waits for more (Beast asserted n >= 5)", "[http][reader]") {
  // Found by http_parser_fuzz: "0\r\n" buffered, next() called twice, then
  // one byte at a time; Beast re-parsed the last chunk from under 5 bytes.
  request_reader r;
  r.feed("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
  CHECK(r.next() == ev::head);
  r.feed("0\r\n");
  CHECK(r.next() == ev::need_more);
  CHECK(r.next() == ev::need_more);
  r.feed("\r");
  CHECK(r.next() == ev::need_more);
  r.feed("\n");
  REQUIRE(r.next() == ev::request);
  CHECK(r.take().body.empty());
  // The fuzzer's second find: a last-chunk line with a stray byte, "0\xd8\r\n".
  request_reader q;
  q.feed("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\xd8\r\n");
  while (q.next() == ev::head) {
  }
  CHECK(q.next() != ev::request);
}
