#include <herd/websocket/utf8.hpp>

namespace herd::ws {

bool utf8_validator::feed(std::string_view bytes) noexcept {
  if (!ok_) return false;
  for (unsigned char c : bytes) {
    if (need_) {
      if (c < lo_ || c > hi_) return ok_ = false;
      lo_ = 0x80, hi_ = 0xBF;
      --need_;
      continue;
    }
    if (c < 0x80) continue;
    if (c < 0xC2) return ok_ = false;  // a stray continuation, or C0/C1 (overlong)
    if (c < 0xE0) {
      need_ = 1;
    } else if (c < 0xF0) {
      need_ = 2;
      if (c == 0xE0) lo_ = 0xA0;       // overlong below U+0800
      else if (c == 0xED) hi_ = 0x9F;  // surrogates U+D800..DFFF
    } else if (c < 0xF5) {
      need_ = 3;
      if (c == 0xF0) lo_ = 0x90;       // overlong below U+10000
      else if (c == 0xF4) hi_ = 0x8F;  // above U+10FFFF
    } else {
      return ok_ = false;
    }
  }
  return true;
}

bool valid_utf8(std::string_view s) noexcept {
  utf8_validator v;
  v.feed(s);
  return v.complete();
}

}  // namespace herd::ws
