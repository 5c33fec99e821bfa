#include "terminal_text.hpp"

#include <cstdio>

namespace observer_cli {
namespace {

// The length of the valid UTF-8 sequence at s[i] (no overlong forms, no
// surrogates, at most U+10FFFF), or 0.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  auto byte = [&](std::size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0u; };
  auto cont = [&](std::size_t k, unsigned lo = 0x80, unsigned hi = 0xbf) { return byte(k) >= lo && byte(k) <= hi; };
  unsigned c = byte(i);
  if (c >= 0xc2 && c <= 0xdf) return cont(i + 1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    unsigned lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    return cont(i + 1, lo, hi) && cont(i + 2) ? 3 : 0;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    unsigned lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    return cont(i + 1, lo, hi) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  }
  return 0;
}

unsigned code_point(std::string_view s, std::size_t i, std::size_t len) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]) & 0x3fu; };
  unsigned c = static_cast<unsigned char>(s[i]);
  if (len == 2) return (c & 0x1fu) << 6 | b(1);
  if (len == 3) return (c & 0x0fu) << 12 | b(1) << 6 | b(2);
  return (c & 0x07u) << 18 | b(1) << 12 | b(2) << 6 | b(3);
}

// Characters a terminal acts on or that change how a line reads.
bool unsafe_code_point(unsigned cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

void escape_into(std::string& out, std::string_view s, bool keep_newlines) {
  char buf[8];
  for (std::size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      ++i;
    } else if (c == '\n' && keep_newlines) {
      out += '\n';
      ++i;
    } else if (std::size_t len = c >= 0x80 ? utf8_length(s, i) : 0; len != 0) {
      unsigned cp = code_point(s, i, len);
      if (unsafe_code_point(cp)) {
        std::snprintf(buf, sizeof buf, "\\u%04x", cp);
        out += buf;
      } else {
        out.append(s.substr(i, len));
      }
      i += len;
    } else {  // C0, DEL, or a byte that is not UTF-8
      std::snprintf(buf, sizeof buf, "\\x%02x", unsigned(c));
      out += buf;
      ++i;
    }
  }
}

}  // namespace

std::string terminal_safe(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  escape_into(out, s, false);
  return out;
}

std::string terminal_safe_lines(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  escape_into(out, s, true);
  return out;
}

std::string json_text(const json& j) {
  // ensure_ascii escapes everything past 0x7f and dump() every C0 control;
  // only DEL is left, and in dumped JSON it can only be inside a string.
  std::string text = j.dump(-1, ' ', /*ensure_ascii=*/true);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\x7f')
      out += "\\u007f";
    else
      out += c;
  }
  return out;
}

}  // namespace observer_cli
