// The two layers together, as the push gateway uses them: herd::http's
// router answers plain requests and hands an upgrade route's connection to
// herd::ws::serve, on the same keep-alive connection, with the frames the
// client sent right behind its upgrade request (the `rest` of the read).
#include "support/ws_client.hpp"
#include "support/ws_server.hpp"

#include <herd/http/router.hpp>
#include <herd/http/server.hpp>

#include <catch2/catch.hpp>

using namespace ws_test;
using namespace std::chrono_literals;

namespace {

uint16_t start_gateway_like(const std::string& name) {
  herd::http::router r;
  r.get("/healthz", [](herd::http::request&, const herd::http::bindings&) {
    return herd::http::response::text(200, "ok");
  });
  r.upgrade("/ws", [](herd::net::tcp_socket s, herd::http::request q, std::string rest) {
    herd::ws::options o;
    (void)herd::ws::serve(std::move(s), q, rest, std::make_unique<echo_handler>(herd::pid{}), std::move(o));
  });
  auto l = herd::net::start_listener(name, {.bind = "127.0.0.1", .port = 0}, herd::http::serve(std::move(r)));
  return l ? l->port : 0;
}

// Reads one HTTP response head and a Content-Length body from `c`.
std::string read_response(ws_client& c) {
  std::string head;
  while (head.find("\r\n\r\n") == std::string::npos) {
    std::string b = c.sock.recv_n(1, 10000);
    if (b.empty()) return head;
    head += b;
  }
  auto at = head.find("Content-Length: ");
  std::size_t n = at == std::string::npos ? 0 : std::stoul(head.substr(at + 16));
  return head + c.sock.recv_n(n, 10000);
}

}  // namespace

TEST_CASE("http and ws: a keep-alive connection answers GET /healthz, then upgrades, and the frame sent behind the upgrade is echoed", "[ws][http]") {
  std::vector<std::string> bad;
  herd::test::run_node(net_test::node_opts(2), [&] {
    uint16_t port = start_gateway_like("ws_http");
    REQUIRE(port != 0);
    herd::blocking([&] {
      ws_client c;
      if (!c.sock.connect(port)) return bad.push_back("no connect");
      c.sock.send_all("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
      std::string first = read_response(c);
      if (!first.starts_with("HTTP/1.1 200") || !first.ends_with("ok")) bad.push_back("healthz: " + first);
      // The upgrade and a masked text frame in one write: the frame is in the
      // bytes the HTTP reader took past the head.
      std::string up = "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                       "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
      std::string frame;
      herd::ws::write_frame(frame, herd::ws::opcode::text, "behind the head", true, 0x01020304u, 0);
      c.sock.send_all(up + frame);
      std::string head;
      while (head.find("\r\n\r\n") == std::string::npos) {
        std::string b = c.sock.recv_n(1, 10000);
        if (b.empty()) break;
        head += b;
      }
      if (!head.starts_with("HTTP/1.1 101")) return bad.push_back("upgrade: " + head);
      if (head.find("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=") == std::string::npos)
        bad.push_back("accept key: " + head);
      auto echoed = c.read();
      if (!echoed || echoed->payload != "behind the head") bad.push_back("no echo of the frame behind the head");
      c.send(herd::ws::opcode::text, "second");
      auto second = c.read();
      if (!second || second->payload != "second") bad.push_back("no echo of the second frame");
      c.send(herd::ws::opcode::close, std::string("\x03\xe8", 2));
      if (c.expect_close() != 1000) bad.push_back("no close 1000");
    });
    (void)herd::net::stop_listener("ws_http");
  });
  INFO((bad.empty() ? std::string() : bad.front()));
  CHECK(bad.empty());
}
