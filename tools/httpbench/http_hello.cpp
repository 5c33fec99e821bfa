// http_hello: the HTTP layer alone under load, for wrk (docs/http.md,
// "Throughput"). GET /healthz answers "ok"; POST /echo answers its body.
//
//   http_hello --port P [--bind ADDR] [--workers N] [--max-connections N|infinity]
//              [--idle-hibernate-ms MS]
//
// Prints "listening on ADDR:PORT"; SIGINT/SIGTERM drains and exits 0 (the
// examples' server_main).
#include "server_main.hpp"

#include <herd/http/server.hpp>

int main(int argc, char** argv) {
  example::server_options o = example::parse_server_options("http_hello", argc, argv, {"--first-data-timeout-ms"});
  herd::http::router r;
  r.get("/healthz", [](herd::http::request&, const herd::http::bindings&) {
    return herd::http::response::text(200, "ok");
  });
  r.post("/echo", [](herd::http::request& q, const herd::http::bindings&) {
    return herd::http::response::text(200, std::move(q.body));
  });
  herd::http::server_options ho;
  ho.idle_hibernate = o.idle_hibernate;
  return example::server_main("http_hello", o, herd::http::serve(std::move(r), ho));
}
