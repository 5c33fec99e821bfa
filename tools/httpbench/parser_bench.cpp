// Parser choice figures (docs/http.md): N pipelined requests parsed from
// memory into herd::http::request values, by herd's request_reader
// (Boost.Beast's basic_parser) and, when libhttp-parser-dev is installed,
// by nodejs/http-parser 2.9 with the same copying into a request. One
// RESULT line:
//   RESULT parser_bench requests=N beast_ns_per_req=.. http_parser_ns_per_req=..
//   httpbench_parser [requests]
#include <herd/http/reader.hpp>

#ifdef HERD_HAVE_HTTP_PARSER
#include <http_parser.h>
#endif

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using clk = std::chrono::steady_clock;

// A wrk-style GET and a browser-style POST with a body, alternating.
std::string make_stream(std::size_t n) {
  const std::string get = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";
  const std::string post =
      "POST /push/user/12345 HTTP/1.1\r\nHost: gateway.local:8080\r\nUser-Agent: pushbench/1.0\r\n"
      "Accept: */*\r\nContent-Type: text/plain; charset=utf-8\r\nX-Request-Id: 0123456789abcdef\r\n"
      "Content-Length: 32\r\n\r\n{\"msg\":\"hello from the bench!\"}\n";
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += (i % 2 == 0) ? get : post;
  return s;
}

double beast_ns(const std::string& stream, std::size_t n, std::size_t& checksum) {
  auto t0 = clk::now();
  herd::http::request_reader r;
  std::size_t got = 0;
  // Fed in 16 KiB pieces, as reads would bring it.
  for (std::size_t at = 0; at < stream.size(); at += 16384) {
    r.feed(std::string_view(stream).substr(at, 16384));
    for (bool more = true; more;) {
      switch (r.next()) {
        case herd::http::request_reader::event::need_more: more = false; break;
        case herd::http::request_reader::event::head: break;
        case herd::http::request_reader::event::request: {
          auto q = r.take();
          checksum += q.body.size() + q.headers.size();
          ++got;
          break;
        }
        case herd::http::request_reader::event::error:
          std::fprintf(stderr, "beast: error %d\n", r.error_status());
          std::exit(1);
      }
    }
  }
  if (got != n) std::exit(1);
  return std::chrono::duration<double, std::nano>(clk::now() - t0).count() / double(n);
}

#ifdef HERD_HAVE_HTTP_PARSER
struct hp_state {
  herd::http::request cur;
  std::size_t got = 0;
  std::size_t* checksum;
  bool in_value = false;
};
int on_url(http_parser* p, const char* a, size_t n) {
  static_cast<hp_state*>(p->data)->cur.target.append(a, n);
  return 0;
}
int on_field(http_parser* p, const char* a, size_t n) {
  auto* s = static_cast<hp_state*>(p->data);
  if (s->in_value || s->cur.headers.empty()) s->cur.headers.push_back({});
  s->in_value = false;
  s->cur.headers.back().name.append(a, n);
  return 0;
}
int on_value(http_parser* p, const char* a, size_t n) {
  auto* s = static_cast<hp_state*>(p->data);
  s->in_value = true;
  s->cur.headers.back().value.append(a, n);
  return 0;
}
int on_headers_done(http_parser* p) {
  auto* s = static_cast<hp_state*>(p->data);
  s->cur.method = http_method_str(static_cast<http_method>(p->method));
  auto mark = s->cur.target.find('?');
  s->cur.path = s->cur.target.substr(0, mark);
  if (mark != std::string::npos) s->cur.query = s->cur.target.substr(mark + 1);
  s->cur.version_minor = p->http_minor;
  return 0;
}
int on_body(http_parser* p, const char* a, size_t n) {
  static_cast<hp_state*>(p->data)->cur.body.append(a, n);
  return 0;
}
int on_done(http_parser* p) {
  auto* s = static_cast<hp_state*>(p->data);
  *s->checksum += s->cur.body.size() + s->cur.headers.size();
  herd::http::request done = std::move(s->cur);
  s->cur = herd::http::request{};
  s->in_value = false;
  ++s->got;
  return 0;
}

double http_parser_ns(const std::string& stream, std::size_t n, std::size_t& checksum) {
  auto t0 = clk::now();
  http_parser_settings st{};
  st.on_url = on_url;
  st.on_header_field = on_field;
  st.on_header_value = on_value;
  st.on_headers_complete = on_headers_done;
  st.on_body = on_body;
  st.on_message_complete = on_done;
  http_parser p;
  http_parser_init(&p, HTTP_REQUEST);
  hp_state s;
  s.checksum = &checksum;
  p.data = &s;
  for (std::size_t at = 0; at < stream.size(); at += 16384) {
    std::size_t len = std::min<std::size_t>(16384, stream.size() - at);
    if (http_parser_execute(&p, &st, stream.data() + at, len) != len) {
      std::fprintf(stderr, "http_parser: %s\n", http_errno_name(HTTP_PARSER_ERRNO(&p)));
      std::exit(1);
    }
  }
  if (s.got != n) std::exit(1);
  return std::chrono::duration<double, std::nano>(clk::now() - t0).count() / double(n);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1000000;
  std::string stream = make_stream(n);
  std::size_t checksum = 0;
  double beast = 1e18;
  for (int round = 0; round < 5; ++round) beast = std::min(beast, beast_ns(stream, n, checksum));  // best of 5
  std::printf("RESULT parser_bench requests=%zu bytes_per_req=%.0f beast_ns_per_req=%.1f", n,
              double(stream.size()) / double(n), beast);
#ifdef HERD_HAVE_HTTP_PARSER
  double hp = 1e18;
  for (int round = 0; round < 5; ++round) hp = std::min(hp, http_parser_ns(stream, n, checksum));
  std::printf(" http_parser_ns_per_req=%.1f", hp);
#else
  std::printf(" http_parser_ns_per_req=absent");
#endif
  std::printf(" checksum=%zu\n", checksum);
}
