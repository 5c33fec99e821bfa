// The context switch. fiber_context.cpp is the only file that touches
// Boost.Context; it also carries libstdc++'s per-thread exception state with
// each fiber and annotates every switch for ASan and TSan (Debian's Boost is
// fcontext-only, whose switches the sanitizers cannot see by themselves).
#pragma once
#include <herd/runtime/fiber.hpp>

#include <cstddef>
#include <cstdint>

namespace herd::rt {

// send: the fiber queued a send on its worker's send_ring and is held by the
// worker (no queue, no waiting state) until the batch is flushed.
enum class suspend_reason : uintptr_t { park = 1, yield, yield_fed, spawn, hibernate, dead, migrate, send };

// The worker's half of every switch. One per worker thread; only that thread
// touches it.
struct switch_side {
  void* sched_ctx = nullptr;   // the worker loop's context while fibers run
  fiber* current = nullptr;    // the fiber being resumed / running
  void* owner = nullptr;       // the worker this side belongs to
  // A fiber that switched straight to another leaves itself and its reason
  // here; the fiber that arrives finishes the switch for it (see .cpp).
  fiber* from = nullptr;
  suspend_reason from_why = suspend_reason::park;
  // Decides whether a suspending fiber may switch straight to another one and
  // which (nullptr: go through the worker loop). Set by the worker.
  fiber* (*pick_direct)(switch_side*, fiber* leaving, suspend_reason) = nullptr;
  // Finishes a direct switch on behalf of the fiber that left (park: the
  // waiting transition; yield: back to the queue).
  void (*after_direct)(switch_side*, fiber* left, suspend_reason) = nullptr;
  const void* stack_bottom = nullptr;  // ASan: the thread's own stack
  std::size_t stack_size = 0;
  void* fake_stack = nullptr;
  void* tsan_fiber = nullptr;  // TSan: the thread's own fiber
  void* eh_globals = nullptr;  // this thread's libstdc++ exception state (fixed per thread)

  // On the worker thread, before its first resume.
  void init_on_thread() noexcept;
};

struct resumed {
  fiber* back;          // the fiber that switched back to the loop (may differ
                        // from the one resumed, after direct switches)
  suspend_reason why;
};

// Worker side. Runs f — starting it on f->stack if f->ctx is null — until a
// fiber switches back to the loop, and says which and why. After `dead` or
// `hibernate` that fiber's stack is no longer in use and its ctx is null.
resumed resume(switch_side& side, fiber* f) noexcept;

// Fiber side. Leaves f (for another fiber on this worker or for the loop);
// returns when some worker resumes f.
void suspend(fiber* f, suspend_reason why) noexcept;

// Fiber side: leaves for good, as if the fiber's body had returned `why`.
[[noreturn]] void leave_for_good(fiber* f, suspend_reason why) noexcept;

// Fiber side, as seen by the worker that is running it now.
inline switch_side* side_of(fiber* f) noexcept { return static_cast<switch_side*>(f->side); }

}  // namespace herd::rt
