// The node's process table: pid -> control block. A pid is a slot index plus
// the slot's generation; slot `ptr` is published with a seq_cst store and read
// with a seq_cst load (see sched/qsbr.hpp for why reads need no fence), and a
// reader confirms the block's own pid, so a stale pid never reaches a stranger.
//
// Free slots are reused first-in-first-out through a global queue that each
// worker takes from and gives back to in batches of 32 (a per-worker cache
// keeps spawn/exit off the global lock). A slot whose generation would wrap is
// retired for good. The effective limit is max_actors rounded up by the
// caches' capacity (as BEAM rounds +P up), so a spawn fails only once at least
// max_actors processes are alive.
#pragma once
#include <herd/runtime/thread_safety.hpp>
#include <herd/actors/pid.hpp>

#include "process.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

namespace herd::detail {

class process_table {
 public:
  process_table(std::size_t max_actors, unsigned workers);
  ~process_table();
  process_table(const process_table&) = delete;
  process_table& operator=(const process_table&) = delete;

  // Any thread. Reserves a slot; false when the table is full.
  bool allocate(pid& out, unsigned worker);  // worker: index or UINT32_MAX (foreign)
  void publish(pid p, process* proc) noexcept;
  void unpublish(pid p) noexcept;
  // After unpublish: the slot may be reused (a stale pid's lookup then finds
  // the new process and rejects it by its generation).
  void release(pid p, unsigned worker);

  // Any thread (foreign threads under rt::foreign_read_guard).
  process* lookup(pid p) const noexcept {
    if (p.index >= cap_) return nullptr;
    process* proc = slots_[p.index].ptr.load(std::memory_order_seq_cst);
    return proc && proc->id == p ? proc : nullptr;
  }

  // Any thread: prefetches for lookup(p) and a push into the process found.
  // Stage 0: the slot. Stage 1: the control block the slot points at (a
  // relaxed load: nothing is dereferenced), its first line (the fiber's
  // state, which a wake-up writes) and the mailbox's senders' line.
  void prefetch(pid p, int stage) const noexcept;

  std::size_t capacity() const noexcept { return cap_; }
  // For node shutdown: calls fn(process*) for every published slot.
  template <class F>
  void for_each(F&& fn) const {
    uint32_t n = fresh_.load(std::memory_order_acquire);
    for (uint32_t i = 0; i < n && i < cap_; ++i)
      if (process* p = slots_[i].ptr.load(std::memory_order_seq_cst)) fn(p);
  }

 private:
  struct slot {
    std::atomic<process*> ptr{nullptr};
    uint32_t generation = 0;  // owned by whoever holds the free slot
    uint32_t unused = 0;
  };
  static_assert(sizeof(slot) == 16);
  // A small FIFO ring of free slot indices. A worker's cache is touched only
  // by that worker's thread; the foreign threads' cache only under m_.
  struct alignas(64) cache {
    static constexpr uint32_t cap = 64;
    uint32_t idx[cap];
    uint32_t head = 0, n = 0;
    uint32_t pop() noexcept {
      uint32_t v = idx[head];
      head = (head + 1) % cap;
      --n;
      return v;
    }
    void push(uint32_t v) noexcept { idx[(head + n++) % cap] = v; }
  };
  bool refill(cache& c) HERD_EXCLUDES(m_);
  void spill(cache& c) HERD_REQUIRES(m_);

  std::size_t cap_;
  slot* slots_;        // mmap'ed, touched only as slots are used
  std::size_t map_bytes_;
  std::atomic<uint32_t> fresh_{0};
  herd::rt::mutex m_;
  std::deque<uint32_t> free_ HERD_GUARDED_BY(m_);  // FIFO of released slots
  std::unique_ptr<cache[]> caches_;
  unsigned workers_;
};

}  // namespace herd::detail
