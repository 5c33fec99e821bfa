// libFuzzer target: the HTTP/1.1 server's sans-I/O core (http/reader.hpp)
// on arbitrary bytes. The first two bytes choose where the rest is cut into
// reads; the same bytes are also fed whole. Checks what the connection loop
// relies on: both feedings give the same requests and the same error (the
// answer must not depend on TCP's segmenting; one may still be waiting for
// the end of a head the other refused); an error is one of the
// statuses the loop knows; no body passes max_body; every request's path
// is its target up to '?'; the router takes any parsed request, and the
// response writer frames its body as the method asks.
#include <herd/http/reader.hpp>
#include <herd/http/response.hpp>
#include <herd/http/router.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

const herd::http::limits lim{.max_head = 512, .max_body = 1024};

struct run {
  std::vector<herd::http::request> got;
  int error = 0;
  bool idle = false;
};

void check(const herd::http::request& q) {
  if (q.body.size() > lim.max_body) std::abort();
  if (q.target.substr(0, q.path.size()) != q.path) std::abort();
  if (q.path.find('?') != std::string::npos) std::abort();
  if (q.version_minor != 0 && q.version_minor != 1) std::abort();
  static const herd::http::router routes = [] {
    herd::http::router r;
    r.get("/a/:x", {}).post("/a/:x/b", {});
    return r;
  }();
  (void)routes.find(q.method, q.path);
  std::string out;
  const bool head = q.method == "HEAD";
  herd::http::write_response(out, herd::http::response::text(200, q.body),
                             {.version_minor = q.version_minor, .keep_alive = herd::http::keep_alive(q),
                              .head = head});
  // The answer to HEAD is the head alone, with the Content-Length a GET
  // would have (RFC 9110, 9.3.2); any other ends with the body. A HEAD
  // request may carry a body of its own (framed like any other).
  std::string tail = "Content-Length: " + std::to_string(q.body.size()) + "\r\n\r\n";
  if (!head) tail += q.body;
  if (!out.ends_with(tail)) std::abort();
}

void drain(herd::http::request_reader& r, run& out) {
  for (;;) {
    switch (r.next()) {
      case herd::http::request_reader::event::need_more:
        return;
      case herd::http::request_reader::event::head:
        (void)herd::http::expects_continue(r.current());
        break;
      case herd::http::request_reader::event::request:
        out.got.push_back(r.take());
        check(out.got.back());
        break;
      case herd::http::request_reader::event::error:
        out.error = r.error_status();
        if (out.error != 400 && out.error != 413 && out.error != 431 && out.error != 505) std::abort();
        return;
    }
  }
}

run feed(std::string_view bytes, std::size_t a, std::size_t b) {
  herd::http::request_reader r(lim);
  run out;
  std::size_t cuts[] = {std::min(a, bytes.size()), std::min(std::max(a, b), bytes.size()), bytes.size()};
  std::size_t at = 0;
  for (std::size_t c : cuts) {
    r.feed(bytes.substr(at, c - at));
    drain(r, out);
    at = c;
  }
  out.idle = r.idle();
  if (!out.error && out.idle) r.shrink();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 2, size - 2);
  run whole = feed(bytes, bytes.size(), bytes.size());
  run split = feed(bytes, data[0], std::size_t(data[0]) + data[1]);
  // Beast may notice a malformed head only once the head is whole, so
  // one feeding can still wait on an unfinished head that the other
  // already refused: then the requests before it must agree.
  // And a head both bad (400, 505) and over max_head may be refused for
  // either, depending on whether Beast read its start line before the limit.
  if (whole.error != split.error) {
    const run& waiting = whole.error ? split : whole;
    bool both_said = whole.error != 0 && split.error != 0 && (whole.error == 431 || split.error == 431);
    if (!both_said && (waiting.error || waiting.idle)) std::abort();
  }
  if (whole.got.size() != split.got.size()) std::abort();
  for (std::size_t i = 0; i < whole.got.size(); ++i) {
    const auto &x = whole.got[i], &y = split.got[i];
    if (x.method != y.method || x.target != y.target || x.body != y.body || x.headers.size() != y.headers.size())
      std::abort();
  }
  return 0;
}
