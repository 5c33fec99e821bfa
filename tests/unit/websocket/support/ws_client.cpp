#include "ws_client.hpp"

namespace ws_test {

std::string ws_client::open(uint16_t port, std::string_view extra, std::string_view version) {
  if (!sock.connect(port)) return {};
  std::string req = "GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: ";
  req += version;
  req += "\r\n";
  req += extra;
  req += "\r\n";
  sock.send_all(req);
  std::string head;
  while (head.find("\r\n\r\n") == std::string::npos) {
    std::string b = sock.recv_n(1, 10000);
    if (b.empty()) return head;
    head += b;
  }
  return head;
}

void ws_client::send(herd::ws::opcode op, std::string_view payload, bool fin, uint8_t rsv, bool masked) {
  std::string f;
  herd::ws::write_frame(f, op, payload, fin, masked ? std::optional<uint32_t>(0xa1b2c3d4) : std::nullopt, rsv);
  sock.send_all(f);
}

std::optional<frame_in> ws_client::read(int timeout_ms) {
  auto need = [&](std::size_t n) {
    while (buf.size() < n) {
      std::string b = sock.recv_n(1, timeout_ms);  // byte by byte is fine for tests
      if (b.empty()) return false;
      buf += b;
    }
    return true;
  };
  if (!need(2)) return std::nullopt;
  frame_in f;
  f.fin = uint8_t(buf[0]) & 0x80;
  f.op = herd::ws::opcode(uint8_t(buf[0]) & 0x0F);
  uint64_t len = uint8_t(buf[1]) & 0x7F;
  std::size_t head = 2;
  if (len == 126) {
    if (!need(4)) return std::nullopt;
    len = uint64_t(uint8_t(buf[2])) << 8 | uint8_t(buf[3]);
    head = 4;
  } else if (len == 127) {
    if (!need(10)) return std::nullopt;
    len = 0;
    for (int i = 0; i < 8; ++i) len = len << 8 | uint8_t(buf[2 + i]);
    head = 10;
  }
  if (len > (64u << 20)) return std::nullopt;
  // Large payloads: read the rest in bulk.
  while (buf.size() < head + len) {
    std::string b = sock.recv_n(std::min<std::size_t>(head + len - buf.size(), 65536), timeout_ms);
    if (b.empty()) return std::nullopt;
    buf += b;
  }
  f.payload = buf.substr(head, len);
  buf.erase(0, head + len);
  return f;
}

uint16_t ws_client::expect_close(int timeout_ms) {
  while (auto f = read(timeout_ms)) {
    if (f->op != herd::ws::opcode::close) continue;
    std::string c;
    herd::ws::write_close(c, f->close_code() ? f->close_code() : 1000, {}, 0x01020304);
    sock.send_all(c);
    return f->close_code();
  }
  return 0;
}

}  // namespace ws_test
