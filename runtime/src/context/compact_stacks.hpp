// Compact fibers (spawn_options::compact_stack): no stack of their own. A
// compact fiber runs on one of a few shared slots, and each time it leaves
// for the worker loop the part of that slot it uses (typically well under a
// page) is copied to the heap; it is copied back to the same addresses
// before it runs again. A million parked callers then cost a million small
// heap blocks instead of a million stack pages, each of which is a page-table
// entry whose first touch costs ~7-11 µs on a virtualised host (docs/design.md,
// "Compact fibers").
//
// Invariants:
//  * A fiber's frames hold their own addresses, so once started it must run
//    on the same slot (its `home`) until it ends or hibernates; it chooses a
//    home on its first run and after each hibernation.
//  * A slot has at most one owner: the fiber running on it, or parked on it
//    with its frames in place ("pinned": a blocking() call or a batched send,
//    whose job or result another thread writes into the fiber's frames while
//    it is parked). Every other fiber homed there is copied out.
//  * A fiber whose home is owned waits on the slot's list (state scheduled, in
//    no queue: a wake meanwhile only marks it notified). Releasing a slot hands
//    it straight to the first waiter, which the releasing worker queues.
//  * Owner, list and hand-off are under the slot's spinlock; the lock's
//    release/acquire orders the bytes a leaving fiber left in the slot (and
//    its heap copy) before the next owner's copy in.
//  * Never part of a direct switch: a compact fiber always leaves through the
//    loop (worker::pick_direct), which copies it out on the worker's stack.
#pragma once
#include <herd/runtime/fiber.hpp>
#include <herd/runtime/thread_safety.hpp>

#include "context/frame_store.hpp"
#include "context/stack_allocator.hpp"
#include "sched/spinlock.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace herd::rt {

// Per compact fiber, from prepare_compact_stack to its end (fiber::compact).
struct compact_state {
  char* saved = nullptr;  // from compact_stacks::frames; the frames while copied out
  uint32_t len = 0;       // bytes in `saved` (the slot's top `len` bytes)
  uint32_t cap = 0;
  int32_t home = -1;      // slot index; -1: none (not started, or hibernated)
  uint32_t pins = 0;      // > 0: frames must stay in place while parked. The fiber's own.
  fiber* next_waiter = nullptr;
  void* tsan_fiber = nullptr;  // TSan: one per compact fiber (a slot's frames change owner)
};

inline compact_state* compact_of(const fiber* f) noexcept { return static_cast<compact_state*>(f->compact); }

class compact_stacks {
 public:
  compact_stacks() = default;
  ~compact_stacks();
  compact_stacks(const compact_stacks&) = delete;
  compact_stacks& operator=(const compact_stacks&) = delete;

  // Any thread. Carves the shared slots on first use; false with *error when
  // they cannot be had. `count` and `class_index` are taken from the first call.
  bool ensure(stack_allocator& stacks, uint32_t class_index, unsigned count, std::string* error);
  bool ready() const noexcept { return ready_.load(std::memory_order_acquire); }
  unsigned count() const noexcept { return ready() ? n_ : 0; }

  // Any thread: times a fiber was given a slot to run on, and times one had to
  // wait for its home slot (summed over the slots, each under its lock).
  struct totals {
    uint64_t runs = 0;
    uint64_t waits = 0;
  };
  totals sum() const noexcept;

  // Worker side, before f runs. Its home slot, now owned by f (choosing a
  // free one when f has no home), or nullptr: f waits on its home's list.
  stack_slot* acquire(fiber* f, compact_state* cs) noexcept;
  // Worker side, after f (the owner) left the slot. Returns the waiter the slot
  // was handed to, for the caller to queue, or nullptr.
  fiber* release(const compact_state* cs) noexcept;

  frame_store frames;  // where copied-out frames wait

 private:
  struct alignas(64) entry {
    spinlock m;
    fiber* owner = nullptr;
    fiber* head = nullptr;
    fiber* tail = nullptr;
    stack_slot* slot = nullptr;
    uint64_t runs = 0;
    uint64_t waits = 0;
  };
  mutex init_m_;
  std::atomic<bool> ready_{false};
  std::unique_ptr<entry[]> e_;
  unsigned n_ = 0;
  std::atomic<unsigned> next_{0};  // relaxed: where a homeless fiber starts looking
};

// Copies n bytes that may be sanitizer-poisoned or another fiber's frames,
// without the sanitizers' interceptors (they would report the redzones).
void copy_frames(char* dst, const char* src, std::size_t n) noexcept;

// Worker side: copies f's frames back into `slot` (f owns it; f->ctx set).
void compact_copy_in(fiber* f, compact_state* cs, stack_slot* slot) noexcept;
// Worker side: copies the frames of f (which left `f->stack` for the loop)
// out to the heap. Throws nothing; on allocation failure the process ends
// (as any herd::alloc failure on a path that cannot report).
void compact_copy_out(frame_store& frames, fiber* f, compact_state* cs) noexcept;
// Makes f compact: its compact_state (herd::alloc) and the flag.
void compact_make(fiber* f);
// Frees what compact_state holds (the fiber ended or was never started).
void compact_free(frame_store& frames, fiber* f) noexcept;

}  // namespace herd::rt
