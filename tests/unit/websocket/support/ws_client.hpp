// Test-only: a raw WebSocket client over a blocking POSIX socket (net
// tests' raw_client), so tests can send exactly the frames a rule is about —
// unmasked, reserved bits, bad UTF-8 split across fragments. Any thread;
// every read is bounded.
#pragma once
#include "../../net/net_fixture.hpp"

#include <herd/websocket/frame.hpp>

#include <optional>
#include <string>

namespace ws_test {

struct frame_in {
  bool fin = false;
  herd::ws::opcode op{};
  std::string payload;
  uint16_t close_code() const {
    return payload.size() >= 2 ? uint16_t(uint8_t(payload[0]) << 8 | uint8_t(payload[1])) : 0;
  }
};

struct ws_client {
  net_test::raw_client sock;
  std::string buf;

  // Connects and sends an upgrade request (`extra` header lines end with
  // "\r\n"; `version` replaces 13); returns the answer's head.
  std::string open(uint16_t port, std::string_view extra = {}, std::string_view version = "13");
  bool upgraded(uint16_t port, std::string_view extra = {}) {
    return open(port, extra).starts_with("HTTP/1.1 101");
  }
  void send(herd::ws::opcode op, std::string_view payload, bool fin = true, uint8_t rsv = 0, bool masked = true);
  void send_raw(std::string_view bytes) { sock.send_all(bytes); }
  // The next frame, or nullopt at EOF / after timeout_ms.
  std::optional<frame_in> read(int timeout_ms = 10000);
  // Reads frames until a close frame; answers it (masked) and returns its
  // code (0: none came); then eof() tells whether the server closed TCP.
  uint16_t expect_close(int timeout_ms = 10000);
  bool eof(int timeout_ms = 10000) { return sock.wait_eof(timeout_ms); }
};

}  // namespace ws_test
