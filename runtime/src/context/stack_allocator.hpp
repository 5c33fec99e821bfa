// Fiber stacks: slots carved from reserved arena chunks, one arena per size class.
// The design and its invariants are described at the top of stack_allocator.cpp.
#pragma once

#include <herd/runtime/thread_safety.hpp>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

namespace herd::rt {

// How a slot's guard is made. madv_guard (MADV_GUARD_INSTALL, Linux >= 6.13) puts markers in
// the page tables and costs no extra mapping; mprotect splits the mapping, two per stack, and
// so is bounded by vm.max_map_count.
enum class guard_kind : uint8_t { madv_guard, mprotect };

const char* to_string(guard_kind kind) noexcept;  // "madv_guard" / "mprotect"

// Probes MADV_GUARD_INSTALL once per process on a scratch mapping; falls back to mprotect.
// Any thread.
guard_kind detect_guard_kind() noexcept;

// Size classes: powers of two from 16 KiB to 64 MiB.
inline constexpr size_t min_stack_size = size_t{16} * 1024;
inline constexpr size_t max_stack_size = size_t{64} * 1024 * 1024;
inline constexpr uint32_t stack_class_count = 13;  // log2(64 MiB / 16 KiB) + 1
inline constexpr size_t no_stack_class = SIZE_MAX;

// The class holding `bytes` (rounded up), or no_stack_class when bytes > 64 MiB.
constexpr size_t class_for(size_t bytes) noexcept {
  if (bytes > max_stack_size) return no_stack_class;
  size_t index = 0;
  for (size_t size = min_stack_size; size < bytes; size <<= 1) ++index;
  return index;
}

constexpr size_t class_size(size_t class_index) noexcept { return min_stack_size << class_index; }

struct stack_slot {
  char* lo = nullptr;             // lowest usable byte (just above the guard)
  char* hi = nullptr;             // one past the highest usable byte; page aligned; initial sp
  stack_slot* next = nullptr;     // free-list link, private to pools and the surplus lists
  void* tsan_fiber = nullptr;     // made by the context switcher; destroyed with the allocator
  uint32_t class_index = 0;
  bool clean = true;              // no resident pages: never used, or trimmed since last use
  // Out of the foreign threads' pool, in a fiber's hands: it goes back there (give_back_stack).
  bool foreign = false;
  size_t size() const noexcept { return size_t(hi - lo); }
};

struct stack_options {
  size_t default_size = 64 * 1024;
  size_t guard_size = 4096;  // rounded up to whole pages
  guard_kind guard = detect_guard_kind();
  size_t chunk_slots = 1024;  // slots reserved per chunk (fewer for classes above 1 MiB)
};

struct stack_allocator_stats {
  uint64_t slots_carved = 0;
  uint64_t slots_in_use = 0;   // carved, minus the surplus lists, minus the pools' free lists
  uint64_t slots_surplus = 0;  // on the allocator's surplus lists
  uint64_t slots_trimmed = 0;  // pages given back (allocator and pools together)
  uint64_t bytes_reserved = 0;
  uint64_t chunks = 0;
  guard_kind guard = guard_kind::mprotect;
};

// Writes to the page holding p from user mode without changing it (an atomic OR of zero):
// the background prefault's touch of a top page, which a fiber that carving handed the slot
// to meanwhile may already keep frames in. Any thread; p must be writable.
inline void touch_page(char* p) noexcept {
#if defined(__x86_64__)
  asm volatile("lock orb $0, %0" : "+m"(*p) : : "memory");
#else
  __atomic_fetch_or(p, char(0), __ATOMIC_RELAXED);
#endif
}

// Gives a slot's usable pages back (MADV_DONTNEED); the guard stays. Any thread that owns the
// slot. Returns false if the kernel refused (the slot then stays dirty).
bool trim_slot(stack_slot* slot) noexcept;

// The process-wide owner of all stack memory; one per runtime. Thread-safe unless a member
// says otherwise. Destroy it after every pool that uses it and after the last fiber stopped
// running on its stacks (the destructor unmaps everything, and under TSan destroys the slots'
// TSan fibers).
class stack_allocator {
 public:
  explicit stack_allocator(const stack_options& options = {});
  ~stack_allocator();
  stack_allocator(const stack_allocator&) = delete;
  stack_allocator& operator=(const stack_allocator&) = delete;

  const stack_options& options() const noexcept { return options_; }  // guard_size rounded
  guard_kind guard() const noexcept { return options_.guard; }
  uint32_t default_class() const noexcept { return default_class_; }

  // A never-used slot with its guard in place; reserves a new chunk when the class has none
  // left. nullptr and a message in *error (may be null) on failure. Any thread; this is the
  // growth path (it may mmap), pools call it only when their lists and the surplus are empty.
  stack_slot* carve(uint32_t class_index, std::string* error);

  // Where to run background work (the runtime's blocking pool). When set, a
  // class whose current chunk is half carved gets its next chunk reserved,
  // guarded and its slots' top pages pre-faulted off the spawn path, on
  // another core: a spawn storm then neither waits for guard installation
  // nor takes the first-touch fault of each new stack. Set before use.
  void set_background(void (*run)(void* ctx, void (*job)(void*), void* arg), void* ctx) noexcept {
    background_ = run;
    background_ctx_ = ctx;
  }

  // Up to `max` surplus slots of a class as a chain through `next`, hottest first;
  // *taken says how many. Any thread.
  stack_slot* take_surplus(uint32_t class_index, size_t max, size_t* taken);
  // Hands a chain of slots of one class (linked through `next`, null-terminated) to the
  // surplus lists. `unused`: the caller knows they lay unused for a whole window already, so
  // the next trim_surplus may take them. Any thread.
  void put_surplus(stack_slot* chain, bool unused = false);
  // Gives back the pages of up to `budget` dirty surplus slots that lay in the surplus, unused,
  // for a whole window (see roll_window) -- or, with `any_age`, of any dirty surplus slot,
  // oldest first; returns how many. Any thread; makes syscalls, so never call it on a spawn
  // path.
  size_t trim_surplus(size_t budget, bool any_age = false);
  // Gives back the top pages that prefaulting touched in slots not carved yet (the current
  // chunk's rest and the prepared chunk): after a spawn burst they would stay resident for
  // good. Returns how many pages. Any thread; one madvise per slot, so for a quiet runtime.
  size_t trim_uncarved();
  // Whether some surplus slot still holds pages (a later trim_surplus may give them back).
  // Any thread; lock-free (relaxed per-class hints): for a worker about to park.
  bool has_dirty_surplus();

  // Whether addr lies in the guard of a carved slot, and which. ASYNC-SIGNAL-SAFE: lock-free
  // reads of descriptors published with release stores; no allocation.
  bool contains_guard(const void* addr, const stack_slot** slot_out) const noexcept;

  stack_allocator_stats stats() const noexcept;  // any thread; counters are relaxed snapshots

  // A pool's counters, written only by that pool (relaxed load + store, no read-modify-write)
  // and read by the allocator. The allocator owns them and never frees them before its
  // destructor, so they are read without a lock; a new pool may take over a retired pool's
  // counters, since only the sums over all pools matter.
  struct alignas(64) pool_counters {
    std::array<std::atomic<uint64_t>, stack_class_count> acquired{};
    std::array<std::atomic<uint64_t>, stack_class_count> released{};
    std::atomic<size_t> free_slots{0};  // stacks on the pool's free lists, for stats()
    pool_counters* next = nullptr;      // immutable once published
    bool in_use = false;                // guarded by pools_mutex_
  };
  pool_counters* register_pool();
  void unregister_pool(pool_counters* counters);  // after the pool published free_slots = 0
  void count_trimmed(size_t n) noexcept { trimmed_.fetch_add(n, std::memory_order_relaxed); }

  // The stacks of a class in use across the runtime (acquired minus released, summed over
  // every pool); raises the class's peak for this window. Any thread; lock-free, N relaxed
  // loads for N pools, and a compare-exchange only when the peak rises.
  uint64_t sample_live(uint32_t class_index) noexcept;
  // Carved stacks of the class outside the surplus lists (in use or on a pool's free list),
  // minus the peak in use over this window and the last: how many the pools hold beyond what
  // the recent peak needs. Negative when the surplus could still give some. Any thread.
  int64_t excess(uint32_t class_index) const noexcept;
  // Starts a new window if `window_ms` passed since the last: the peaks move on, and dirty
  // surplus slots age by one window. Cheap when it is not time. `now_ms`: the calling pool's
  // clock. Any thread.
  void roll_window(uint64_t now_ms, uint64_t window_ms);
  // The acquires plus releases of a class summed over every pool. Any thread; relaxed loads.
  uint64_t traffic_total(uint32_t class_index) const noexcept;

 private:
  struct chunk;
  // A LIFO of slots through `next`; the tail lets a whole list be stacked onto another.
  struct slot_list {
    stack_slot* head = nullptr;
    stack_slot* tail = nullptr;
    size_t count = 0;
    void push(stack_slot* first, stack_slot* last, size_t n) noexcept;  // a chain, on top
    stack_slot* pop() noexcept;
    void move_onto(slot_list& below) noexcept;  // this one's slots on top of below's; empties this
  };
  struct class_arena {
    mutex carve_mutex;
    chunk* current HERD_GUARDED_BY(carve_mutex) = nullptr;
    uint32_t next_slot HERD_GUARDED_BY(carve_mutex) = 0;
    chunk* prepared HERD_GUARDED_BY(carve_mutex) = nullptr;  // reserved, guarded and pre-faulted in the background
    bool preparing HERD_GUARDED_BY(carve_mutex) = false;

    mutex surplus_mutex;
    // Dirty slots by age, each LIFO with the most recently used on top: put since the last
    // roll, put during the window before, and in the surplus since before that (trimmable).
    slot_list fresh HERD_GUARDED_BY(surplus_mutex), aging HERD_GUARDED_BY(surplus_mutex),
        stale HERD_GUARDED_BY(surplus_mutex);
    slot_list clean HERD_GUARDED_BY(surplus_mutex);
    // fresh+aging+stale and stale's counts as of the last change under surplus_mutex
    // (publish_counts): relaxed hints that let a parking worker's maintenance skip the lock
    // of every class with nothing to trim (a lock pair per class per park cost ~20% of a
    // park-heavy workload). A stale hint only delays a trim to the next maintenance.
    std::atomic<size_t> dirty_hint{0}, stale_hint{0};

    // Read by excess() on the pools' release paths; written only on slow paths.
    alignas(64) std::atomic<uint64_t> carved{0};
    std::atomic<uint64_t> surplus{0};  // as surplus_, for this class
    std::atomic<uint64_t> peak_now{0}, peak_before{0};  // of sample_live(), per window
  };

  static void publish_counts(class_arena& arena) noexcept HERD_REQUIRES(arena.surplus_mutex);
  uint64_t live_now(uint32_t class_index) const noexcept;
  chunk* reserve_chunk(uint32_t class_index, std::string* error);
  void prepare_next(class_arena& arena, uint32_t class_index) HERD_REQUIRES(arena.carve_mutex);
  void prefault_tops(chunk& c) noexcept;
  // MADV_POPULATE_WRITE on the top pages of slots [first, end) of c, batched. Best effort.
  void populate_tops(chunk& c, uint32_t first, uint32_t end) noexcept;
  static constexpr uint32_t populate_batch = 64;  // tops per step of the background prefault
  static constexpr uint32_t populate_ahead = 16;  // tops a carve populates at once (and iovecs per call)
  bool install_chunk_guards(chunk& c, std::string* error);
  std::string map_failure(const std::string& what, int err) const;

  void (*background_)(void*, void (*)(void*), void*) = nullptr;
  void* background_ctx_ = nullptr;
  stack_options options_;
  uint32_t default_class_ = 0;
  size_t page_size_ = 4096;
  int pidfd_ = -1;  // for batched process_madvise(MADV_GUARD_INSTALL); -1: per-slot madvise

  std::array<class_arena, stack_class_count> classes_;

  // Chunk descriptors live in one fixed mapping so the signal handler can scan them without
  // locks: entries [0, chunk_count_) are immutable once published (release store of the count).
  mutex chunk_mutex_;  // serialises publication; taken inside a carve_mutex
  chunk* chunks_ = nullptr;
  size_t chunk_capacity_ = 0;
  std::atomic<size_t> chunk_count_{0};

  std::atomic<uint64_t> carved_{0};
  std::atomic<uint64_t> surplus_{0};
  std::atomic<uint64_t> trimmed_{0};
  std::atomic<uint64_t> bytes_reserved_{0};

  mutex pools_mutex_;  // registration, and the rolling of the windows
  std::atomic<pool_counters*> pools_{nullptr};  // push-front, never shrinks
  alignas(64) std::atomic<uint64_t> window_start_ms_{0};  // read on every release
};

}  // namespace herd::rt
