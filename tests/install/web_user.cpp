// An install-tree user of herd::ws (and through it herd::http): a router
// with a plain route and a WebSocket upgrade route, served on 127.0.0.1,
// asked GET /healthz by a client process. Exit 0 when the answer is 200 ok.
#include <herd/actors.hpp>
#include <herd/http/router.hpp>
#include <herd/http/server.hpp>
#include <herd/net.hpp>
#include <herd/websocket/serve.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace {
struct echo final : herd::ws::handler {
  void handle(herd::ws::session& s, const herd::ws::event& e) override {
    if (e.type == herd::ws::event::kind::text) s.text(e.payload);
  }
};
}  // namespace

int main() {
  using namespace std::chrono_literals;
  herd::node n({.workers = 2, .quiet = true});
  std::string answer;
  n.run([&] {
    herd::http::router r;
    r.get("/healthz", [](herd::http::request&, const herd::http::bindings&) {
      return herd::http::response::text(200, "ok");
    });
    r.upgrade("/ws", [](herd::net::tcp_socket s, herd::http::request q, std::string rest) {
      (void)herd::ws::serve(std::move(s), q, rest, std::make_unique<echo>(), herd::ws::options{});
    });
    auto l = herd::net::start_listener("web", {.bind = "127.0.0.1", .port = 0}, herd::http::serve(std::move(r)));
    if (!l) return;
    if (auto c = herd::net::tcp_socket::connect("127.0.0.1", l->port, 5s)) {
      if (c->send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 5s))
        while (auto b = c->recv(0, 5s)) answer += b->to_string();
    }
    (void)herd::net::stop_listener("web");
  });
  return answer.starts_with("HTTP/1.1 200") && answer.ends_with("ok") ? 0 : 1;
}
