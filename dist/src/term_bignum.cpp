// Integers past 64 bits: decimal text both ways and an exact comparison
// with a double. Schoolbook arithmetic on 32-bit limbs: fine for printing
// and parsing, which are not on a hot path.
#include "term_node.hpp"

#include <cmath>

namespace herd {
namespace detail {
namespace {

std::vector<uint32_t> to_limbs(const std::vector<uint8_t>& mag) {
  std::vector<uint32_t> l((mag.size() + 3) / 4, 0);
  for (std::size_t i = 0; i < mag.size(); ++i) l[i / 4] |= uint32_t(mag[i]) << (8 * (i % 4));
  return l;
}

}  // namespace

std::string big_to_decimal(bool neg, const std::vector<uint8_t>& mag) {
  auto l = to_limbs(mag);
  std::vector<uint32_t> chunks;  // base 10^9, least significant first
  while (!l.empty()) {
    uint64_t rem = 0;
    for (std::size_t i = l.size(); i-- > 0;) {
      uint64_t cur = (rem << 32) | l[i];
      l[i] = uint32_t(cur / 1000000000u);
      rem = cur % 1000000000u;
    }
    chunks.push_back(uint32_t(rem));
    while (!l.empty() && l.back() == 0) l.pop_back();
  }
  std::string s = neg ? "-" : "";
  if (chunks.empty()) return "0";
  s += std::to_string(chunks.back());
  for (std::size_t i = chunks.size() - 1; i-- > 0;) {
    std::string part = std::to_string(chunks[i]);
    s.append(9 - part.size(), '0');
    s += part;
  }
  return s;
}

int compare_big_double(bool neg, const std::vector<uint8_t>& mag, double d) noexcept {
  // The big integer is outside int64; a double inside that range is on the
  // side of zero from it.
  constexpr double two63 = 9223372036854775808.0;
  if (d < two63 && d >= -two63) return neg ? -1 : 1;
  if (neg != (d < 0)) return neg ? -1 : 1;
  // |d| >= 2^63, so d is an integer: compare magnitudes exactly.
  int e;
  double m = std::frexp(std::fabs(d), &e);  // |d| = m * 2^e, m in [0.5, 1)
  auto mant = uint64_t(std::ldexp(m, 53));  // |d| = mant * 2^(e-53), e - 53 >= 10
  std::size_t shift = std::size_t(e - 53);
  std::size_t dbits = std::size_t(e);
  std::size_t bbits = mag.size() * 8;
  for (uint8_t top = mag.back(); !(top & 0x80); top <<= 1) --bbits;
  int mc;  // |big| against |d|
  if (bbits != dbits) {
    mc = bbits < dbits ? -1 : 1;
  } else {
    mc = 0;
    for (std::size_t bit = bbits; bit-- > 0 && mc == 0;) {
      int b = (mag[bit / 8] >> (bit % 8)) & 1;
      int dv = bit >= shift && bit - shift < 64 ? int((mant >> (bit - shift)) & 1) : 0;
      if (b != dv) mc = b < dv ? -1 : 1;
    }
  }
  return neg ? -mc : mc;
}

}  // namespace detail

std::optional<term> term::parse_integer(std::string_view s) {
  bool neg = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  std::vector<uint8_t> mag;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    unsigned carry = unsigned(c - '0');
    for (auto& b : mag) {
      unsigned v = unsigned(b) * 10 + carry;
      b = uint8_t(v);
      carry = v >> 8;
    }
    if (carry) mag.push_back(uint8_t(carry));
  }
  return detail::term_access::make_integer(neg, std::move(mag));
}

}  // namespace herd
