#include "sha1.hpp"

#include <cstring>

namespace herd::ws::detail {
namespace {

uint32_t rol(uint32_t x, int n) noexcept { return (x << n) | (x >> (32 - n)); }

void block(uint32_t h[5], const uint8_t* p) noexcept {
  uint32_t w[80];
  for (int i = 0; i < 16; ++i)
    w[i] = uint32_t(p[4 * i]) << 24 | uint32_t(p[4 * i + 1]) << 16 | uint32_t(p[4 * i + 2]) << 8 | p[4 * i + 3];
  for (int i = 16; i < 80; ++i) w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
  for (int i = 0; i < 80; ++i) {
    uint32_t f, k;
    if (i < 20) f = (b & c) | (~b & d), k = 0x5A827999;
    else if (i < 40) f = b ^ c ^ d, k = 0x6ED9EBA1;
    else if (i < 60) f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDC;
    else f = b ^ c ^ d, k = 0xCA62C1D6;
    uint32_t t = rol(a, 5) + f + e + k + w[i];
    e = d, d = c, c = rol(b, 30), b = a, a = t;
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
}

constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

std::array<uint8_t, 20> sha1(std::string_view data) noexcept {
  uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  std::size_t n = data.size();
  std::size_t full = n / 64 * 64;
  for (std::size_t i = 0; i < full; i += 64) block(h, p + i);
  // The tail, 0x80, zeros, and the length in bits: one or two blocks.
  uint8_t tail[128] = {};
  std::size_t rest = n - full;
  std::memcpy(tail, p + full, rest);
  tail[rest] = 0x80;
  std::size_t len = rest < 56 ? 64 : 128;
  uint64_t bits = uint64_t(n) * 8;
  for (int i = 0; i < 8; ++i) tail[len - 1 - i] = uint8_t(bits >> (8 * i));
  block(h, tail);
  if (len == 128) block(h, tail + 64);
  std::array<uint8_t, 20> out{};
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 4; ++j) out[4 * i + j] = uint8_t(h[i] >> (24 - 8 * j));
  return out;
}

std::string base64(const uint8_t* p, std::size_t n) {
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (std::size_t i = 0; i < n; i += 3) {
    uint32_t v = uint32_t(p[i]) << 16;
    if (i + 1 < n) v |= uint32_t(p[i + 1]) << 8;
    if (i + 2 < n) v |= p[i + 2];
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += i + 1 < n ? alphabet[(v >> 6) & 63] : '=';
    out += i + 2 < n ? alphabet[v & 63] : '=';
  }
  return out;
}

int base64_decoded_size(std::string_view s) noexcept {
  if (s.empty() || s.size() % 4 != 0) return -1;
  std::size_t pad = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
    if (c == '=' && i >= s.size() - 2) {
      ++pad;
    } else if (!alpha || pad) {
      return -1;  // '=' only at the end
    }
  }
  return int(s.size() / 4 * 3 - pad);
}

}  // namespace herd::ws::detail
