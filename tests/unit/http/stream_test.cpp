// Streamed response bodies (stream.hpp) over real sockets on 127.0.0.1: the
// raw bytes a client reads back, pipelining behind a stream, and a peer that
// goes away mid-stream. Clients run on the blocking pool with bounded polls.
#include <herd/http/server.hpp>

#include "http_peer.hpp"

#include <atomic>
#include <functional>
#include <string>

using namespace std::chrono_literals;
using herd::http::bindings;
using herd::http::request;
using herd::http::response;
using herd::http::response_stream;
using http_test::peer;

namespace {

// What the endless stream's handler saw, read by the test after the client left.
struct outcome {
  std::atomic<int> closed_errors{0};    // stream_closed caught by the handler
  std::atomic<int> unwound{0};          // the handler's locals destroyed
  std::atomic<std::size_t> written{0};  // body bytes body() accepted
};

struct guard {
  outcome* o;
  ~guard() { o->unwound.fetch_add(1); }
};

const std::string big(100000, 'b');

herd::http::router stream_routes(outcome* seen) {
  herd::http::router r;
  r.get("/hello", [](request&, const bindings&) { return response::text(200, "hello"); });
  r.stream("GET", "/pieces", [](request&, const bindings&, response_stream& out) {
    out.reply(200, {{"Content-Type", "text/plain"}, {"Content-Length", "999"}});  // a framing header is dropped
    out.body("a");
    out.body("");  // sends nothing (an empty chunk would end the body)
    out.body("bc");
    out.body(big);
  });  // returns before fin: the server ends the body
  r.stream("GET", "/sized", [](request&, const bindings&, response_stream& out) {
    out.reply(200, {}, 5);
    out.body("ab");
    out.body("cde", true);
  });
  r.stream("GET", "/nocontent", [](request&, const bindings&, response_stream& out) { out.reply(204); });
  r.stream("GET", "/silent", [](request&, const bindings&, response_stream&) {});
  r.stream("GET", "/broken", [](request&, const bindings&, response_stream& out) {
    out.reply(200);
    out.body("partial");
    throw std::runtime_error("handler bug mid-body");
  });
  r.stream("GET", "/overlong", [](request&, const bindings&, response_stream& out) {
    out.reply(200, {}, 3);
    out.body("four");  // std::logic_error: past the Content-Length
  });
  // Up to 256 MiB in 64 KiB pieces: far more than the socket buffers hold, so
  // it can only end early if body() waits for a client that stopped reading.
  r.stream("GET", "/endless", [seen](request&, const bindings&, response_stream& out) {
    guard g{seen};
    out.reply(200);
    std::string piece(65536, 'e');
    try {
      for (int i = 0; i < 4096; ++i) {
        out.body(piece);
        seen->written.fetch_add(piece.size());
      }
    } catch (const herd::http::stream_closed&) {
      seen->closed_errors.fetch_add(1);
      throw;  // the server closes the connection
    }
  });
  return r;
}

void with_server(outcome* seen, const std::function<void(uint16_t)>& client,
                 const std::function<void()>& after = {}) {
  herd::test::run_node(net_test::node_opts(2), [&] {
    auto l = herd::net::start_listener("http_stream_test", {.bind = "127.0.0.1"},
                                       herd::http::serve(stream_routes(seen)));
    REQUIRE(l);
    uint16_t port = l->port;
    herd::blocking([&] { client(port); });
    if (after) after();
    REQUIRE(herd::net::stop_listener("http_stream_test"));
  });
}

std::size_t open_connections() {
  auto i = herd::net::info("http_stream_test");
  return i ? i->connections : 999;
}

}  // namespace

TEST_CASE("http: a streamed body is chunked without a length, plain with one, and HEAD and 204 get none", "[http][stream]") {
  outcome seen;
  std::optional<http_test::reply> pieces, sized, head, nocontent, after;
  std::string raw_start;  // the first response, as sent
  with_server(&seen, [&](uint16_t port) {
    peer p(port);
    p.send("GET /pieces HTTP/1.1\r\nHost: t\r\n\r\n");
    while (p.buf.find("\r\n0\r\n\r\n") == std::string::npos && p.fill(10000)) {
    }
    raw_start = p.buf;  // the bytes as sent: head, then the chunks
    pieces = p.read();
    p.send("GET /sized HTTP/1.1\r\n\r\n");
    sized = p.read();
    p.send("HEAD /pieces HTTP/1.1\r\n\r\n");
    head = p.read(10000, true);
    p.send("GET /nocontent HTTP/1.1\r\n\r\n");
    nocontent = p.read();
    p.send("GET /hello HTTP/1.1\r\n\r\n");  // no stray body bytes before this answer
    after = p.read();
  });
  REQUIRE(pieces);
  CHECK(pieces->status == 200);
  CHECK(pieces->has("Transfer-Encoding: chunked"));
  CHECK_FALSE(pieces->has("Content-Length"));
  CHECK(pieces->has("Content-Type: text/plain"));
  CHECK(pieces->body == "abc" + big);
  // Each non-empty piece its own chunk, then the last chunk.
  CHECK(raw_start.find("\r\n\r\n1\r\na\r\n2\r\nbc\r\n186a0\r\nbbb") != std::string::npos);
  REQUIRE(raw_start.size() >= 7);
  CHECK(raw_start.substr(raw_start.size() - 7) == "\r\n0\r\n\r\n");
  REQUIRE(sized);
  CHECK(sized->has("Content-Length: 5"));
  CHECK_FALSE(sized->has("chunked"));
  CHECK(sized->body == "abcde");
  REQUIRE(head);
  CHECK(head->has("Transfer-Encoding: chunked"));
  REQUIRE(nocontent);
  CHECK(nocontent->status == 204);
  CHECK_FALSE(nocontent->has("Transfer-Encoding"));
  CHECK_FALSE(nocontent->has("Content-Length"));
  REQUIRE(after);
  CHECK(after->body == "hello");
}

TEST_CASE("http: requests pipelined behind a streamed one are answered after it, in order", "[http][stream]") {
  outcome seen;
  std::vector<std::string> bodies;
  with_server(&seen, [&](uint16_t port) {
    peer p(port);
    p.send("GET /hello HTTP/1.1\r\n\r\nGET /pieces HTTP/1.1\r\n\r\nGET /sized HTTP/1.1\r\n\r\n"
           "GET /pieces HTTP/1.1\r\n\r\nGET /hello HTTP/1.1\r\n\r\n");
    for (int i = 0; i < 5; ++i) {
      auto r = p.read();
      if (!r) break;
      bodies.push_back(r->body);
    }
  });
  REQUIRE(bodies.size() == 5);
  CHECK(bodies[0] == "hello");
  CHECK(bodies[1] == "abc" + big);
  CHECK(bodies[2] == "abcde");
  CHECK(bodies[3] == "abc" + big);
  CHECK(bodies[4] == "hello");
}

TEST_CASE("http: an HTTP/1.0 client gets a streamed body without chunks, ended by the close", "[http][stream]") {
  outcome seen;
  std::optional<http_test::reply> r;
  std::string rest;
  bool closed = false;
  with_server(&seen, [&](uint16_t port) {
    peer p(port);
    p.send("GET /pieces HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    r = p.read(10000, true);  // the head; the body is what comes until EOF
    while (p.fill(10000)) {
    }
    rest = p.buf;
    closed = p.c.wait_eof(100);  // fill stopped at EOF: a second look sees it too
  });
  REQUIRE(r);
  CHECK(r->has("Connection: close"));
  CHECK_FALSE(r->has("chunked"));
  CHECK(rest == "abc" + big);
  CHECK(closed);
}

TEST_CASE("http: a stream handler that fails ends the connection, a silent one answers 500", "[http][stream]") {
  outcome seen;
  std::optional<http_test::reply> silent, broken_head, overlong_head;
  std::optional<std::string> partial_chunk;
  bool silent_closed = false, broken_closed = false, overlong_closed = false;
  with_server(&seen, [&](uint16_t port) {
    {
      peer p(port);
      p.send("GET /silent HTTP/1.1\r\n\r\n");
      silent = p.read();
      silent_closed = p.closed();
    }
    {
      peer p(port);
      p.send("GET /broken HTTP/1.1\r\n\r\n");
      broken_head = p.read(10000, true);
      partial_chunk = p.take(12, 10000);  // "7\r\npartial\r\n", and no last chunk after it
      broken_closed = p.closed();
    }
    {
      peer p(port);
      p.send("GET /overlong HTTP/1.1\r\n\r\n");
      overlong_head = p.read(10000, true);
      overlong_closed = p.closed();  // the promised 3 bytes never come: only the close says so
    }
  });
  REQUIRE(silent);
  CHECK(silent->status == 500);
  CHECK(silent_closed);
  REQUIRE(broken_head);
  CHECK(broken_head->status == 200);
  CHECK(partial_chunk == std::optional<std::string>("7\r\npartial\r\n"));
  CHECK(broken_closed);
  REQUIRE(overlong_head);
  CHECK(overlong_head->has("Content-Length: 3"));
  CHECK(overlong_closed);
}

TEST_CASE("http: a peer that closes mid-stream ends the handler with stream_closed and the connection", "[http][stream]") {
  outcome seen;
  std::optional<http_test::reply> head;
  std::optional<std::string> first;
  bool gone = false;
  with_server(
      &seen,
      [&](uint16_t port) {
        peer p(port);
        p.send("GET /endless HTTP/1.1\r\n\r\n");
        head = p.read(10000, true);
        first = p.take(300000, 10000);  // some of the body, then hang up with the rest unread
      },
      [&] {
        gone = herd::test::eventually([&] { return seen.unwound.load() == 1 && open_connections() == 0; }, 20s);
      });
  REQUIRE(head);
  CHECK(head->has("Transfer-Encoding: chunked"));
  REQUIRE(first);
  CHECK(gone);
  CHECK(seen.closed_errors.load() == 1);
  // Back-pressure: the handler could only offer what the kernel's buffers took.
  CHECK(seen.written.load() < std::size_t(4096) * 65536);
}
