// The adaptive busy wait's policy (runtime_options::adaptive_busy_wait; the
// spin itself is worker::spin, worker_park.cpp). Owner-only state of one
// worker, no atomics.
//
// An idle gap is the time from the worker running dry to its next fiber,
// whatever came between (spins, parks, wake-ups that found nothing). A spin of
// `budget` would have bridged the gaps shorter than it without a futex sleep
// and wake-up; for the longer ones it is CPU spent for nothing. So the worker
// spins only while at least tuning::adaptive_spin_short_share/256 of its recent
// gaps were short: a moving average with weight 1/8, so about six short gaps
// in a row turn the spin on and about six long ones turn it off again. A spin
// that found nothing counts as a long gap (worker.cpp), so a worker spins for
// nothing at most six times in a row, even if it never finds work itself.
#pragma once
#include "sched/tuning.hpp"

#include <cstdint>

namespace herd::rt {

class adaptive_spin {
 public:
  explicit adaptive_spin(uint64_t budget_tsc = 0) noexcept : budget_tsc_(budget_tsc) {}

  bool enabled() const noexcept { return budget_tsc_ != 0; }
  // How long to spin now; 0: park at once.
  uint64_t budget() const noexcept { return short_share_ >= tuning::adaptive_spin_short_share ? budget_tsc_ : 0; }
  void gap(uint64_t gap_tsc) noexcept {
    if (gap_tsc < budget_tsc_) short_share_ += (256 - short_share_) >> 3;
    else short_share_ -= short_share_ >> 3;
  }
  uint32_t short_share() const noexcept { return short_share_; }

 private:
  uint64_t budget_tsc_;
  uint32_t short_share_ = 0;  // out of 256
};

}  // namespace herd::rt
