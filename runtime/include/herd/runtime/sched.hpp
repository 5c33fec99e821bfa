// The scheduler as seen from fibers (and from foreign threads for wake/start).
// Every function says who may call it. "From a fiber" means code running on a
// fiber's stack under a herd worker; such calls may suspend the fiber and
// resume it on another worker, so per-thread state must be re-read afterwards.
#pragma once
#include <herd/runtime/fiber.hpp>

#include <cstdint>
#include <string>

namespace herd::rt {

inline constexpr uint64_t no_deadline = UINT64_MAX;

// Any thread. The fiber running on the calling thread, or nullptr. Not inlined,
// with a compiler barrier, so a value is never cached across a suspension.
fiber* current() noexcept;

// From a fiber. Suspends until woken. Wake-ups may be spurious: callers loop
// on their own condition.
void park();

// From a fiber. Like park(), but also wakes at deadline_ms (rt::now_ms() time).
// Returns true if it was the deadline (the timer fired), false otherwise.
bool park_until(uint64_t deadline_ms);

// From a fiber. Goes to the back of the run queue.
void yield();

// Counts one reduction; past the budget, yields. From a fiber (no-op elsewhere).
void consume_reduction();

// The same, for callers that already hold their own fiber (`self` must be the
// fiber running on the calling thread): no thread-local lookup.
void park(fiber* self);
bool park_until(fiber* self, uint64_t deadline_ms);
// From a fiber, about itself: ends it here, without returning to its base —
// the worker treats it as dead (its stack goes back to the pool, then
// fiber_ops::finished runs). For a fiber that cannot be unwound.
[[noreturn]] void end_fiber_now(fiber* self);

// Out of line: the budget ran out.
void yield_for_budget(fiber* self);
inline void consume_reduction(fiber* self) {
  if (--self->reductions_left == 0) yield_for_budget(self);
}
// The budget ran out in a receive that has messages waiting: the fiber is
// treated as one a message just woke (run next), not sent to the ring's tail.
void yield_for_budget_fed(fiber* self);
// wake(target) from the fiber `self` (or, with self == nullptr, from anywhere).
void wake_from(fiber* self, fiber* target) noexcept;

// Any thread: now_ms() as of the calling worker's last maintenance (within
// ~1 ms; exact off-worker). Costs no clock read on a worker.
uint64_t coarse_now_ms() noexcept;

// Any thread. Makes a waiting fiber runnable (no-op if it is already runnable
// or dead). When called from a fiber, the woken fiber runs next on this worker
// ("run next" slot) — ping-pong stays on one core.
void wake(fiber* f) noexcept;

// Any thread. Gives a new fiber (state scheduled, ops set, stack acquired with
// prepare_stack) to the scheduler. From a fiber, the child runs at once and the
// caller continues after it first blocks (depth-first: skynet's peak memory
// tracks live work). From a foreign thread it goes to the injection queue.
void start(fiber* child);

// Any thread. Acquires a stack of at least `bytes` (0 = the runtime default)
// for f. False with *error set when no stack can be had (mapping limit, memory).
bool prepare_stack(fiber* f, std::size_t bytes, std::string* error);

// Any thread. Instead of prepare_stack: f will have no stack of its own. It
// runs on one of the runtime's shared slots and, whenever it leaves for the
// worker loop, its frames are copied to the heap (and back before it runs):
// a parked fiber then holds its used depth, not a stack page. Costs a copy of
// that depth per switch, and no direct switches (docs/design.md, "Compact
// fibers"). Nothing may point into its frames while it is parked, except
// what blocking() and batched sends keep there (they pin it: it keeps the
// slot and others homed there wait). Only the runtime's default stack size.
bool prepare_compact_stack(fiber* f, std::size_t bytes, std::string* error);

// Any thread. Gives back a stack that prepare_stack (or prepare_compact_stack)
// acquired for a fiber that was never started.
void release_stack(fiber* f) noexcept;

// Any thread. The default stack size and guard mechanism in use.
std::size_t default_stack_size() noexcept;
// Any thread: the size of the stacks f is given (its class, fixed at
// prepare_stack; read it only after the fiber was published to you).
std::size_t stack_size_of(const fiber* f) noexcept;
const char* guard_mechanism() noexcept;

// Any thread: true while the calling thread is a herd worker.
bool on_worker() noexcept;

// Any thread: the calling worker's index (0..workers-1), or UINT32_MAX.
uint32_t worker_index() noexcept;

// Any thread: the number of workers of the running runtime.
unsigned worker_count() noexcept;

// Retires obj: free_fn(obj) runs once no worker can still hold a pointer to it
// that it read from a shared structure before the call (a grace period: every
// worker has passed through its scheduler loop or was parked). Any thread.
void retire(void* obj, void (*free_fn)(void*)) noexcept;

// Foreign (non-worker) threads that read shared pointers protected by retire()
// bracket the access with this guard.
class foreign_read_guard {
 public:
  foreign_read_guard() noexcept;
  ~foreign_read_guard();
  foreign_read_guard(const foreign_read_guard&) = delete;
  foreign_read_guard& operator=(const foreign_read_guard&) = delete;

 private:
  // The runtime it entered (nullptr: none, or on a worker). Kept rather than
  // read again on exit: the runtime may stop meanwhile, and runtime::stop
  // waits for every guard that entered it to leave.
  void* rt_;
};

}  // namespace herd::rt
