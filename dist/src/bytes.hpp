// Big-endian integers in protocol buffers (epmd, the handshake, frames).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace herd::dist::detail {

inline void put16(std::string& s, uint32_t v) {
  s += char(v >> 8);
  s += char(v);
}
inline void put32(std::string& s, uint32_t v) {
  put16(s, v >> 16);
  put16(s, v & 0xffff);
}
inline void put64(std::string& s, uint64_t v) {
  put32(s, uint32_t(v >> 32));
  put32(s, uint32_t(v));
}
inline uint32_t get16(std::string_view s, std::size_t at) {
  return uint32_t(uint8_t(s[at])) << 8 | uint8_t(s[at + 1]);
}
inline uint32_t get32(std::string_view s, std::size_t at) { return get16(s, at) << 16 | get16(s, at + 2); }
inline uint64_t get64(std::string_view s, std::size_t at) { return uint64_t(get32(s, at)) << 32 | get32(s, at + 4); }

}  // namespace herd::dist::detail
