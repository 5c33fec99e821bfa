// Callback timers (what send_after is built on). A timer fires on the worker
// that armed it, in its scheduler loop (not in a fiber): the callback must be
// short and must not block. Cancellation from any thread is lazy: the entry is
// marked and dropped when its slot comes due or the wheel compacts it.
#pragma once
#include <chrono>
#include <cstdint>
#include <utility>

namespace herd::rt {

struct timer_entry;  // runtime-private

class timer_ref {
 public:
  timer_ref() noexcept = default;
  timer_ref(const timer_ref& o) noexcept;
  timer_ref(timer_ref&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  timer_ref& operator=(timer_ref o) noexcept { std::swap(e_, o.e_); return *this; }
  ~timer_ref();
  explicit operator bool() const noexcept { return e_ != nullptr; }
  explicit timer_ref(timer_entry* e) noexcept : e_(e) {}
  timer_entry* entry() const noexcept { return e_; }

 private:
  timer_entry* e_ = nullptr;
};

// Any thread. Runs fire(arg) at deadline_ms; drop(arg) runs instead if the timer
// is cancelled, and in either case exactly once. On a foreign thread the timer
// goes to worker 0's wheel.
timer_ref schedule_timer(uint64_t deadline_ms, void (*fire)(void*), void (*drop)(void*),
                         void* arg);

// Any thread. True if the timer was still pending and will now never fire.
bool cancel_timer(const timer_ref& t) noexcept;

// Any thread. Milliseconds left, or -1 if it fired or was cancelled.
int64_t timer_remaining(const timer_ref& t) noexcept;

}  // namespace herd::rt
