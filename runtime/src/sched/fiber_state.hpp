// Transitions of fiber::state (the word is documented in <herd/runtime/fiber.hpp>).
// Each is one seq_cst RMW:
//  * A waker has published its reason first (a mailbox push, a timer's `fired`
//    flag, a finished blocking job); its RMW here is ordered after that store,
//    and the fiber's park CAS that fails on `notified` reads this RMW, so the
//    fiber then sees the reason (pairs with try_park).
//  * The fiber checks for work, then try_park: if a waker came in between, its
//    RMW came first and the CAS fails; otherwise the waker's RMW sees `waiting`
//    and it (alone) enqueues the fiber.
#pragma once
#include <herd/runtime/fiber.hpp>

namespace herd::rt::state {

constexpr uint32_t waiting = static_cast<uint32_t>(run_state::waiting);
constexpr uint32_t scheduled = static_cast<uint32_t>(run_state::scheduled);
constexpr uint32_t notified = static_cast<uint32_t>(run_state::notified);
constexpr uint32_t dead = static_cast<uint32_t>(run_state::dead);

enum class wake_result { enqueue, nothing };

// Any thread. `enqueue`: the caller must put the fiber in a run queue.
inline wake_result transition_to_notified(fiber* f) noexcept {
  uint32_t s = f->state.load(std::memory_order_relaxed);
  for (;;) {
    uint32_t next;
    switch (s) {
      case waiting: next = scheduled; break;
      case scheduled: next = notified; break;
      default: return wake_result::nothing;  // already notified, or dead
    }
    if (f->state.compare_exchange_weak(s, next, std::memory_order_seq_cst,
                                       std::memory_order_relaxed))
      return next == scheduled ? wake_result::enqueue : wake_result::nothing;
  }
}

// The worker, after the fiber switched out wanting to park. False: a wake came
// while it ran; it stays scheduled and must run again. On failure the CAS read
// `notified` (seq_cst), so the waker's publication is visible to the fiber's
// next look; a waker that sees `notified` before the store below does nothing,
// which is fine: the fiber runs again and looks for work anyway.
inline bool try_park(fiber* f) noexcept {
  uint32_t s = scheduled;
  if (f->state.compare_exchange_strong(s, waiting, std::memory_order_seq_cst,
                                       std::memory_order_seq_cst))
    return true;
  f->state.store(scheduled, std::memory_order_seq_cst);
  return false;
}

// The worker, after the final switch of a finished fiber.
inline void mark_dead(fiber* f) noexcept {
  f->state.store(dead, std::memory_order_seq_cst);
}

// The worker, when a hibernated or new fiber is handed a fresh context.
inline bool is_dead(const fiber* f) noexcept {
  return f->state.load(std::memory_order_relaxed) == dead;
}

}  // namespace herd::rt::state
