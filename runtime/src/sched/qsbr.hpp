// Quiescent-state-based reclamation for objects that other workers may still
// be reading through a pointer they loaded from a shared table (a process
// control block a sender looked up, a socket an epoll event named).
//
// A worker is quiescent between fibers: no fiber holds such a pointer across a
// suspension (sends complete before any switch). Each worker bumps `count` with
// a seq_cst RMW at its periodic maintenance (every <= 61 fibers or 1 ms) and
// goes `offline` (seq_cst exchange) while parked. retire() puts an object in
// the retiring worker's `pending` list; maintenance seals a batch with a
// snapshot of every worker's count and frees it once every other worker has
// bumped past its snapshot or was offline.
//
// Why that is enough: the unpublishing store (seq_cst) precedes the snapshot
// loads (seq_cst) on the retiring worker; a reader bumps `count` (seq_cst RMW)
// before its next seq_cst table load. If the snapshot read count c, the
// reader's bump to c+1 comes later in the single total order, so any load
// after it sees the unpublished (null) entry; loads made before it belong to a
// section that ends with that bump. Foreign threads bracket their reads with
// foreign_read_guard and a batch also waits for a moment with none inside.
//
// The poller: a parked worker blocks in epoll_wait while offline and then
// dispatches what it got (on_ready callbacks that hold an io_source pointer
// and look processes up). Being offline, it would not hold a grace period
// back; so a batch also snapshots the poller's begun() epoch and waits until
// ended() reaches it (every poll that had begun is done dispatching). A poll
// still blocked in epoll_wait is kicked (poller::notify) so an idle node
// still frees its batches.
#pragma once
#include <herd/runtime/thread_safety.hpp>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace herd::rt {

class poller;

class qsbr {
 public:
  struct retired {
    void* obj;
    void (*fn)(void*);
  };

  qsbr(unsigned workers, poller* io);

  // The worker itself.
  void quiescent(unsigned w) noexcept {
    slots_[w].count.fetch_add(1, std::memory_order_seq_cst);
  }
  void go_offline(unsigned w) noexcept { slots_[w].offline.exchange(true, std::memory_order_seq_cst); }
  void go_online(unsigned w) noexcept { slots_[w].offline.exchange(false, std::memory_order_seq_cst); }
  void retire(unsigned w, void* obj, void (*fn)(void*)) { slots_[w].pending.push_back({obj, fn}); }
  // Frees the sealed batch if its grace period is over; seals the pending one.
  void reclaim(unsigned w);
  bool has_work(unsigned w) const noexcept {
    return !slots_[w].pending.empty() || !slots_[w].sealed.empty() ||
           foreign_has_.load(std::memory_order_relaxed);
  }

  // Any non-worker thread.
  void retire_foreign(void* obj, void (*fn)(void*));
  void enter_foreign() noexcept { foreign_readers_.fetch_add(1, std::memory_order_seq_cst); }
  void leave_foreign() noexcept { foreign_readers_.fetch_sub(1, std::memory_order_seq_cst); }
  int64_t foreign_readers() const noexcept { return foreign_readers_.load(std::memory_order_seq_cst); }

  // Once no worker runs: frees everything.
  void reclaim_all();
  std::size_t pending_count() const;

 private:
  struct alignas(64) slot {
    std::atomic<uint64_t> count{0};
    std::atomic<bool> offline{false};
    std::vector<retired> pending, sealed;
    std::vector<uint64_t> snap;
    std::vector<uint8_t> snap_offline;
    uint64_t snap_poll = 0;
  };
  bool grace_over(unsigned w) const noexcept;

  unsigned n_;
  poller* io_;
  std::unique_ptr<slot[]> slots_;
  std::atomic<int64_t> foreign_readers_{0};
  std::atomic<bool> foreign_has_{false};
  mutable mutex foreign_m_;
  std::vector<retired> foreign_ HERD_GUARDED_BY(foreign_m_);
};

}  // namespace herd::rt
