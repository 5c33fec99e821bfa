// The opening handshake (RFC 6455 4.2), sans-I/O: an upgrade request in, the
// bytes of the answer out — 101 with Sec-WebSocket-Accept, or the error
// status that says what was wrong. Any thread (pure functions).
#pragma once
#include <herd/http/request.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace herd::ws {

struct handshake_options {
  // The subprotocols this server speaks, best first. The first of them the
  // client offered is chosen; none in common (or none offered): no
  // Sec-WebSocket-Protocol in the answer, as RFC 6455 4.2.2 says.
  std::vector<std::string> protocols;
};

struct handshake {
  bool accepted = false;
  int status = 0;         // 101, or 400 / 426 / 405
  std::string protocol;   // the chosen subprotocol, "" when none
  std::string response;   // the whole answer, to be written as is
  std::string why;        // when refused: what was wrong
};

// Whether `r` asks for a WebSocket upgrade at all (GET with Upgrade:
// websocket) — what a router checks before handing the connection over.
bool is_upgrade(const http::request& r);
// Checks `r` and builds the answer: 405 for a method other than GET, 400
// for a missing or bad Upgrade / Connection / Sec-WebSocket-Key or
// HTTP/1.0, 426 with `Sec-WebSocket-Version: 13` for another version.
// A refusal's answer carries `Connection: close`.
handshake accept_upgrade(const http::request& r, const handshake_options& o = {});
// base64(SHA-1(key + the RFC's GUID)).
std::string accept_key(std::string_view key);

}  // namespace herd::ws
