// The server side of the C1000K WebSocket simulation: what a push gateway
// runs per connection, over a memory transport instead of a TCP socket.
// http::serve_connection reads the upgrade request, the router's upgrade
// route hands the transport to ws::serve (the 101, then the connection loop,
// hibernating when idle), and the room handler joins the room on a "join"
// frame and writes the room's and the probe's pushes to its peer.
#include <cstdio>
#include <herd/actors/process.hpp>
#include <herd/http/router.hpp>
#include <herd/http/server.hpp>
#include <herd/tables/pg.hpp>
#include <herd/websocket/serve.hpp>

#include "ws_room_parts.hpp"

namespace c1000k::detail {

using herd::net::memory_transport;

struct server {
  std::shared_ptr<const herd::http::basic_router<memory_transport>> routes;
  std::shared_ptr<const herd::ws::options> ws;
  herd::http::server_options http;
};

namespace {

// Stateless: the session and the process carry everything (an idle
// connection costs its handler's 8-byte object).
class room_handler final : public herd::ws::handler {
 public:
  void handle(herd::ws::session& s, const herd::ws::event& e) override {
    if (e.type != herd::ws::event::kind::text) return;
    if (e.payload == "join") {
      herd::pg::join(pg_scope, room_name, herd::self());
      s.text("joined");
    } else {
      s.close(herd::ws::close_code::unsupported, "only join");
    }
  }
  void info(herd::ws::session& s, const herd::any_message& m) override {
    if (auto* r = m.get<room_push>()) {
      s.text(*r->text);
    } else if (auto* p = m.get<probe_push>()) {
      char line[80];
      int n = std::snprintf(line, sizeof line, "probe %d %llu %lld", p->phase, (unsigned long long)p->seq,
                            (long long)p->sent_ns);
      s.text(std::string_view(line, std::size_t(n)));
    }
  }
};

}  // namespace

std::shared_ptr<server> make_server(const ws_room_config& cfg) {
  herd::ws::options o;
  o.idle_hibernate = cfg.idle_hibernate;
  o.ping_interval = cfg.ping_interval;
  o.timeout_code = 4000;  // the gateway's
  auto ws = std::make_shared<const herd::ws::options>(std::move(o));
  herd::http::basic_router<memory_transport> r;
  r.get("/healthz",
        [](herd::http::request&, const herd::http::bindings&) { return herd::http::response::text(200, "ok"); });
  r.upgrade("/ws", [ws](memory_transport t, herd::http::request q, std::string rest) {
    (void)herd::ws::serve(std::move(t), q, rest, std::make_unique<room_handler>(), ws);
  });
  auto s = std::make_shared<server>();
  s->routes = std::make_shared<const herd::http::basic_router<memory_transport>>(std::move(r));
  s->ws = std::move(ws);
  return s;
}

herd::net::memory_handler session_handler(const server& s) {
  // A raw pointer: the std::function keeps it inline (no allocation per
  // session); the driver keeps the server alive until the sessions end.
  const server* sp = &s;
  return [sp](memory_transport t) { herd::http::serve_connection(std::move(t), sp->routes, sp->http); };
}

}  // namespace c1000k::detail
