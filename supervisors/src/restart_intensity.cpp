#include "restart_intensity.hpp"

namespace herd::supervisor::detail {

void restart_intensity::expire(uint64_t now_ms) {
  uint64_t threshold = now_ms > period_ms_ ? now_ms - period_ms_ : 0;
  while (!times_.empty() && times_.front() < threshold) times_.pop_front();
}

bool restart_intensity::add(uint64_t now_ms) {
  expire(now_ms);
  times_.push_back(now_ms);
  if (times_.size() <= intensity_) return true;
  times_.pop_front();  // bounded: intensity + 1 at most
  return false;
}

std::size_t restart_intensity::recent(uint64_t now_ms) {
  expire(now_ms);
  return times_.size();
}

}  // namespace herd::supervisor::detail
