// A worker's cache of free stacks, in front of the process-wide stack_allocator.
#pragma once

#include "stack_allocator.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace herd::rt {

struct stack_pool_options {
  size_t min_bound = 1024;     // a class's free list may always keep this many stacks
  uint64_t window_ms = 10'000; // peaks, other pools' traffic and trimming go by windows this long
  size_t surplus_batch = 32;   // slots moved to or from the allocator's surplus at once
  size_t trim_budget = 4096;   // at most this many madvise calls per maintain()
  // Once no stack has been acquired or released anywhere in the runtime for this long, every
  // free stack is cold: maintain() gives all their pages back without waiting for windows.
  uint64_t quiet_ms = 1000;
};

// Counters are single-writer (the owning worker) relaxed atomics, so stats() may be read from
// any thread, e.g. by the observer.
struct stack_pool_stats {
  uint64_t acquired = 0;
  uint64_t released = 0;
  uint64_t carved = 0;         // acquires served by stack_allocator::carve
  uint64_t from_surplus = 0;   // stacks taken in batches from the allocator's surplus lists
  uint64_t to_surplus = 0;     // releases beyond the bound, handed to the surplus lists
  uint64_t trimmed = 0;        // stacks whose pages maintain() gave back
  size_t local_free = 0;       // stacks on this pool's free lists
};

// One per worker, which alone calls its members (except stats()), plus one
// shared by every non-worker thread (runtime_impl::foreign_stacks): that one is
// called only with runtime_impl::foreign_stacks_m held — by a foreign thread's
// spawn, or by whichever worker trims it while parking (the analysis checks
// the lock: it is HERD_GUARDED_BY that mutex).
// Stacks may be released to a different pool than the one they came from (actors migrate).
class stack_pool {
 public:
  explicit stack_pool(stack_allocator& allocator, const stack_pool_options& options = {});
  ~stack_pool();  // hands every free stack to the allocator's surplus
  stack_pool(const stack_pool&) = delete;
  stack_pool& operator=(const stack_pool&) = delete;

  // The most recently released stack of the class (warm in cache and in RAM), else a batch
  // from the allocator's surplus, else a newly carved slot. nullptr and *error on failure.
  // Steady state: no syscall, no page fault, no lock.
  stack_slot* acquire(uint32_t class_index, std::string* error);

  // Takes a stack back. `now_ms` is the caller's clock (any monotonic millisecond count; this
  // class reads no clock); it only rolls the 10 s windows. Steady state: no syscall, no lock.
  void release(stack_slot* slot, uint64_t now_ms);

  // Returns stacks beyond the bound to the allocator and gives back the pages of stacks nobody
  // used for a whole window (local ones at the cold end of a free list, and surplus ones).
  // Call it when idle, before parking, and now and then when busy -- never on a spawn path:
  // it makes one madvise per stack trimmed. Returns how many stacks it trimmed.
  size_t maintain(uint64_t now_ms);
  // Whether the last maintain() found the runtime's stack traffic quiet (see quiet_ms).
  bool quiet() const noexcept { return quiet_; }
  // When maintain() should run again to give back pages still held by free stacks (here or in
  // the allocator's surplus): the next window's start; UINT64_MAX when every free stack is
  // clean. An idle worker parks no longer than this, so that the pages of a burst's stacks are
  // given back even if nothing else ever wakes it — and then it sleeps for good.
  uint64_t next_trim_ms();

  stack_pool_stats stats() const noexcept;  // any thread
  stack_allocator& allocator() const noexcept { return allocator_; }

 private:
  // Acquires between two samples of the runtime-wide in-use count: a sample costs a load per
  // pool, and the peak is missed by at most this many per pool.
  static constexpr uint32_t sample_period = 64;

  // A class's free stacks, a ring used as a stack: acquire and release at the top (LIFO),
  // eviction and trimming at the bottom, where the coldest stacks are.
  struct free_list {
    std::unique_ptr<stack_slot*[]> ring;
    size_t capacity = 0;  // a power of two, or 0
    size_t bottom = 0;    // ring index of the coldest entry
    size_t count = 0;
    // Other pools' acquires + releases of the class when the window began (the first window
    // counts from the allocator's start); whether they made more than min_bound since then,
    // and in the previous window.
    uint64_t others_base = 0;
    bool shared = false, shared_before = false;
    uint32_t until_sample = sample_period;
    size_t low_now = 0, low_before = 0;     // the fewest free: the bottom `low` went unused
    size_t clean_below = 0;                 // the bottom entries known to be clean
    stack_slot*& at(size_t i) { return ring[(bottom + i) & (capacity - 1)]; }
  };

  void push(free_list& list, stack_slot* slot);
  void grow(free_list& list);
  void resize(free_list& list, size_t capacity);  // capacity: a power of two >= count
  // Evicts what lies beyond the bound, and `room` more stacks so that the next releases do not
  // lock again. Only when the list holds more than min_bound.
  void enforce_bound(uint32_t class_index, bool room);
  void evict(free_list& list, size_t n);  // the n coldest go to the allocator's surplus
  uint64_t others_traffic(uint32_t class_index) const noexcept;
  void roll_windows(uint64_t now_ms);
  void publish_free() noexcept { counters_->free_slots.store(free_total_, std::memory_order_relaxed); }
  static void bump(std::atomic<uint64_t>& c, uint64_t n = 1) noexcept {
    c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);  // single writer
  }

  stack_allocator& allocator_;
  stack_allocator::pool_counters* counters_;  // this pool's, written only here
  stack_pool_options options_;
  std::array<free_list, stack_class_count> lists_;
  uint64_t window_start_ms_ = 0;
  uint64_t traffic_seen_ = 0;     // runtime-wide acquires + releases at the last maintain()
  uint64_t quiet_since_ms_ = 0;   // when traffic_seen_ last changed
  bool quiet_ = false;
  bool uncarved_trimmed_ = false;  // in this quiet period
  size_t free_total_ = 0;  // published in counters_->free_slots for stack_allocator::stats()
  std::atomic<uint64_t> acquired_{0}, released_{0}, carved_{0}, from_surplus_{0}, to_surplus_{0},
      trimmed_{0};
};

}  // namespace herd::rt
