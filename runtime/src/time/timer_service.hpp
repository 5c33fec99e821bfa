// One worker's timers: its wheel behind a spinlock, holding two kinds of node.
//  * A fiber's embedded timer (receive ... after, sleep). Armed by the fiber on
//    the worker it parks on; unlinked eagerly in O(1) by the fiber when it wakes,
//    from whatever worker it then runs on (hence the lock). Firing sets
//    `fired` and wakes the fiber while holding the lock, so a fiber that has
//    disarmed its timer can never be touched by a late firing.
//  * Callback timers (send_after). Cancelled lazily from any thread: the entry
//    is marked and stays linked until its slot comes due, or until enough are
//    dead that the owner compacts the wheel.
#pragma once
#include <herd/runtime/thread_safety.hpp>
#include <herd/runtime/fiber.hpp>
#include <herd/runtime/timer.hpp>

#include "sched/spinlock.hpp"
#include "time/timer_wheel.hpp"

#include <atomic>
#include <cstdint>
#include <vector>

namespace herd::rt {

enum : uint8_t { timer_kind_fiber = 1, timer_kind_callback = 2 };

struct timer_entry {
  timer_node node;
  enum : uint8_t { armed, fired, cancelled };
  std::atomic<uint32_t> refs{2};  // the wheel's and the first timer_ref's
  std::atomic<uint8_t> st{armed};
  void (*fire)(void*) = nullptr;
  void (*drop)(void*) = nullptr;
  void* arg = nullptr;
  class timer_service* owner = nullptr;
};

void timer_entry_unref(timer_entry* e) noexcept;

class timer_service {
 public:
  using wake_fn = void (*)(void* ctx, fiber* f);

  explicit timer_service(uint64_t now_ms) : wheel_(now_ms) {}

  // The owning worker, for the fiber running on it.
  void arm_fiber(fiber* f, uint64_t deadline_ms) noexcept;
  // Any thread: the fiber itself after it wakes. True if its timer had fired.
  static bool disarm_fiber(fiber* f) noexcept;

  // Any thread.
  timer_entry* add(uint64_t deadline_ms, void (*fire)(void*), void (*drop)(void*), void* arg);
  void note_cancelled() noexcept { cancelled_.fetch_add(1, std::memory_order_relaxed); }

  // Fires what is due at now_ms; returns how many fired. Normally the owning
  // worker; another worker may too when the owner is stuck in one long fiber
  // (its timers must not wait for it). One advancer at a time: a caller that
  // finds another one advancing returns 0 at once.
  std::size_t advance(uint64_t now_ms, wake_fn wake, void* ctx);

  // Any thread: a lower bound of the next deadline (UINT64_MAX: none).
  uint64_t earliest() const noexcept { return earliest_.load(std::memory_order_relaxed); }
  std::size_t size() noexcept;

  // At shutdown, on the owner: drops every callback timer (never fired).
  void clear() noexcept;

 private:
  void lower_earliest(uint64_t d) noexcept {
    // relaxed: a hint; the owner re-reads it under the lock before sleeping.
    if (d < earliest_.load(std::memory_order_relaxed)) earliest_.store(d, std::memory_order_relaxed);
  }

  // For a lambda the wheel itself runs while lock_ is held: the analysis
  // treats the lambda as a function of its own that holds nothing.
  timer_wheel& wheel_in_callback() HERD_NO_THREAD_SAFETY_ANALYSIS { return wheel_; }

  spinlock lock_;
  timer_wheel wheel_ HERD_GUARDED_BY(lock_);
  std::atomic<uint64_t> earliest_{UINT64_MAX};
  std::atomic<uint64_t> cancelled_{0};
  std::vector<timer_entry*> due_;  // the current advancer's, reused
  std::atomic<bool> advancing_{false};
};

}  // namespace herd::rt
