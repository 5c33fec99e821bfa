// The descriptor hand-over gate (see fd_reserve.hpp for why and the
// ordering argument).
#include <herd/runtime/fd_reserve.hpp>

#include <sched.h>

#include <atomic>
#include <cstdint>

namespace herd::rt::fd_reserve {
namespace {
std::atomic<uint32_t> takers{0};
std::atomic<uint32_t> hand_overs{0};
}  // namespace

bool try_enter() noexcept {
  takers.fetch_add(1, std::memory_order_seq_cst);
  if (hand_overs.load(std::memory_order_seq_cst) == 0) return true;
  takers.fetch_sub(1, std::memory_order_release);
  return false;
}

void leave() noexcept { takers.fetch_sub(1, std::memory_order_release); }

void begin_hand_over() noexcept {
  hand_overs.fetch_add(1, std::memory_order_seq_cst);
  // A taker inside runs a few non-blocking accept4 calls; it may be
  // preempted, so yield rather than spin hot.
  while (takers.load(std::memory_order_seq_cst) != 0) sched_yield();
}

void end_hand_over() noexcept { hand_overs.fetch_sub(1, std::memory_order_release); }

}  // namespace herd::rt::fd_reserve
