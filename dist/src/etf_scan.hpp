// A bounded reader of the few external-term-format values a distribution
// frame's control tuple holds (small integers, atoms, pids) and a skip over
// any term — for decode_frame, which must not trust the lengths a peer puts
// inside its terms (ei's decoders do: a claimed length can make them read
// past the buffer). Every read checks the bytes left first; skip() walks a
// term without recursion, its work list a counter of terms still to pass,
// so a hostile frame costs at most one step per byte. A failed read leaves
// the scanner failed (ok() false) and every later read fails too.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace herd::dist::detail {

struct scanned_pid {
  std::string node;
  uint32_t num = 0, serial = 0, creation = 0;
};

class etf_scanner {
 public:
  etf_scanner(std::string_view bytes, std::size_t at) : b_(bytes), at_(at) {}

  bool ok() const { return ok_; }
  std::size_t offset() const { return at_; }
  // The next term's tag, without consuming it; 0 at the end or after a failure.
  uint8_t peek() const { return ok_ && at_ < b_.size() ? uint8_t(b_[at_]) : 0; }
  // What went wrong first ("" while ok).
  const char* why() const { return why_; }

  bool version();                     // 131
  bool tuple_header(uint32_t& arity); // SMALL_TUPLE or LARGE_TUPLE
  bool integer(int64_t& v);           // SMALL_INTEGER or INTEGER
  bool atom(std::string& utf8);       // any of the four atom tags (latin-1 made UTF-8)
  bool pid(scanned_pid& p);           // NEW_PID or PID
  bool skip();                        // one whole term of any type

 private:
  bool fail(const char* why) {
    ok_ = false;
    if (!*why_) why_ = why;
    return false;
  }
  bool need(std::size_t n) { return ok_ && (b_.size() - at_ >= n || fail("truncated")); }
  uint8_t u8() { return uint8_t(b_[at_++]); }
  uint32_t u16();
  uint32_t u32();

  std::string_view b_;
  std::size_t at_;
  bool ok_ = true;
  const char* why_ = "";
};

}  // namespace herd::dist::detail
