// The restart intensity: at most `intensity` restarts within any `period`
// (OTP's MaxR / MaxT). A restart at time t counts while t >= now - period,
// as OTP counts it; the window keeps at most intensity + 1 times.
#pragma once
#include <chrono>
#include <cstdint>
#include <deque>

namespace herd::supervisor::detail {

class restart_intensity {
 public:
  restart_intensity(unsigned intensity, std::chrono::milliseconds period)
      : intensity_(intensity), period_ms_(static_cast<uint64_t>(period.count() < 0 ? 0 : period.count())) {}

  // Records a restart at now_ms (rt::now_ms(): virtual in the deterministic
  // mode). False when it is one more than the intensity allows: give up.
  bool add(uint64_t now_ms);
  // Restarts inside the period ending at now_ms.
  std::size_t recent(uint64_t now_ms);
  unsigned intensity() const noexcept { return intensity_; }
  uint64_t period_ms() const noexcept { return period_ms_; }

 private:
  void expire(uint64_t now_ms);
  unsigned intensity_;
  uint64_t period_ms_;
  std::deque<uint64_t> times_;  // oldest first
};

}  // namespace herd::supervisor::detail
