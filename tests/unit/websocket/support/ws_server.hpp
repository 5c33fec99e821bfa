// Test-only: an echo WebSocket server on 127.0.0.1 inside a test node, and
// the bit of HTTP it needs (reading one upgrade head) until the HTTP server
// (http/) hands connections over itself.
#pragma once
#include <herd/actors.hpp>
#include <herd/http/request.hpp>
#include <herd/net.hpp>
#include <herd/websocket/serve.hpp>

#include <atomic>
#include <optional>
#include <string>

namespace ws_test {

// From the socket's owner: reads up to the end of the head (passive recv),
// parses the request line and headers; `rest` gets what came after it.
std::optional<herd::http::request> read_upgrade_head(herd::net::tcp_socket& s, std::string& rest);

// What the echo handler tells its test: its pid at init, and how it ended.
struct echo_opened {
  herd::pid conn;
  std::string protocol;
};
struct echo_closing {  // handler::closing: the code of our close frame then (0: answering the peer's)
  herd::pid conn;
  uint16_t sent = 0;
};
struct echo_ended {
  herd::pid conn;
  herd::ws::ending how;
};

// Echoes text and binary messages; a std::string message from another
// process is pushed as a text frame; a text message "close <code>" makes it
// close with that code. Tells `observer` (if valid) echo_opened, echo_closing and
// echo_ended.
struct echo_handler final : herd::ws::handler {
  herd::pid observer;
  explicit echo_handler(herd::pid o) : observer(o) {}
  void init(herd::ws::session& s, const herd::http::request& r) override;
  void handle(herd::ws::session& s, const herd::ws::event& e) override;
  void info(herd::ws::session& s, const herd::any_message& m) override;
  void closing(herd::ws::session& s) override;
  void terminate(const herd::ws::ending& how) override;
};

// From a process: starts listener `name` on 127.0.0.1:0 serving echo_handler
// with `o`; returns its port (0 on failure).
uint16_t start_echo_server(const std::string& name, const herd::ws::options& o, herd::pid observer = {});

}  // namespace ws_test
