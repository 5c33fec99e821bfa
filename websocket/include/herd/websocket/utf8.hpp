// A streaming UTF-8 validator (RFC 3629: no overlongs, no surrogates, nothing
// above U+10FFFF), fed piece by piece: a sequence split across two frames of
// one message — or across two TCP reads — is checked as one. The first bad
// byte is reported as soon as it is seen (RFC 6455 8.1 "fail fast").
//
// Four bytes of state, so a parser can keep one per connection for free.
// Any thread (a plain value).
#pragma once
#include <cstdint>
#include <string_view>

namespace herd::ws {

class utf8_validator {
 public:
  // false once any byte so far cannot be part of valid UTF-8 (and from then on).
  bool feed(std::string_view bytes) noexcept;
  // True when everything fed is valid and no sequence is left unfinished.
  bool complete() const noexcept { return ok_ && need_ == 0; }
  bool ok() const noexcept { return ok_; }
  void reset() noexcept { *this = utf8_validator{}; }

 private:
  uint8_t need_ = 0;   // continuation bytes still expected
  uint8_t lo_ = 0x80;  // the range the next continuation byte must be in
  uint8_t hi_ = 0xBF;  // (narrower after E0, ED, F0, F4)
  bool ok_ = true;
};

// Whole-string check.
bool valid_utf8(std::string_view s) noexcept;

}  // namespace herd::ws
