#include <herd/websocket/frame.hpp>

namespace herd::ws {

bool valid_close_code(uint16_t code) noexcept {
  if (code >= 1000 && code <= 1003) return true;
  if (code >= 1007 && code <= 1014) return true;
  return code >= 3000 && code <= 4999;
}

void write_frame(std::string& out, opcode op, std::string_view payload, bool fin, std::optional<uint32_t> mask,
                 uint8_t rsv) {
  std::size_t n = payload.size();
  out += char((fin ? 0x80 : 0) | ((rsv & 7) << 4) | uint8_t(op));
  uint8_t m = mask ? 0x80 : 0;
  if (n < 126) {
    out += char(m | n);
  } else if (n <= 0xFFFF) {
    out += char(m | 126);
    out += char(n >> 8);
    out += char(n & 0xFF);
  } else {
    out += char(m | 127);
    for (int i = 7; i >= 0; --i) out += char((uint64_t(n) >> (8 * i)) & 0xFF);
  }
  if (!mask) {
    out.append(payload);
    return;
  }
  uint8_t key[4] = {uint8_t(*mask >> 24), uint8_t(*mask >> 16), uint8_t(*mask >> 8), uint8_t(*mask)};
  out.append(reinterpret_cast<const char*>(key), 4);
  std::size_t at = out.size();
  out.append(payload);
  for (std::size_t i = 0; i < n; ++i) out[at + i] = char(uint8_t(out[at + i]) ^ key[i & 3]);
}

void write_close(std::string& out, uint16_t code, std::string_view reason, std::optional<uint32_t> mask) {
  if (reason.size() > 123) reason = reason.substr(0, 123);
  std::string p;
  p += char(code >> 8);
  p += char(code & 0xFF);
  p.append(reason);
  write_frame(out, opcode::close, p, true, mask);
}

}  // namespace herd::ws
