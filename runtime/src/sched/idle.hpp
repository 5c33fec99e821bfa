// Who is searching for work and who is parked (tokio's idle.rs protocol).
//
// `state_` packs (unparked << 16) | searching. At most half the workers search
// at once; a worker that finds work while searching and was the last searcher
// wakes one parked worker when more work is in sight (work tends to come in
// bunches; worker::end_search), so wake-ups spread one at a time instead of
// as a thundering herd — and a lone request does not wake a sibling that
// would find nothing (issue 19). "Finds work" means any fiber
// it picks, from its own ring or run next as well as by stealing: a worker
// that stayed a searcher while it ran its own ring kept the one search slot
// of a two-worker node, and its pushes, seeing a searcher, woke nobody — the
// chat fan-out of issue 13 ran on one core while the other stayed parked.
//
// Lost wake-up argument: a foreign producer publishes work (an injection
// queue push), then reads state_ with a seq_cst RMW in should_notify(). A
// worker going to park decrements state_ with a seq_cst RMW, then — if it was
// the last searcher — re-checks every queue (worker::work_pending_anywhere).
// Both RMWs hit the same word, so either the producer sees the parked count
// and wakes someone, or the parking worker sees the work.
//
// A worker dispatching I/O inside its own park (still counted as parked)
// announces nothing while it dispatches; once awake it takes the same look if
// it queued more than the one fiber it runs next (worker_park.cpp).
//
// A worker pushing onto its own ring only takes a relaxed look
// (should_notify_hint: no searcher and someone parked, tokio's condition
// without its RMW). Nothing is lost if the look is stale: this worker runs
// that fiber itself if nobody else does. What a stale look costs is
// parallelism, and for a bounded time. The look can be stale only in the
// store-buffer way — it is ordered before a racing parker's RMW while the
// parker's re-check misses the push still in this worker's store buffer —
// and then it saw the parker still searching or unparked. Every later push
// reads state_ again and, the parker's RMW being visible by then (stores
// become visible to relaxed loads in finite time), sees it parked (a fan-out
// pushes again within microseconds); a worker that pushes no more runs down
// its ring alone (the loss ends with it), and one stuck inside a single fiber
// is seen by the monitor within two of its 10 ms ticks, which then wakes a
// parked worker for its ring (monitor.cpp). An RMW per push would close the
// window, but would bounce the shared line between busy workers on every push.
#pragma once
#include <herd/runtime/thread_safety.hpp>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace herd::rt {

class idle {
 public:
  explicit idle(unsigned workers) : workers_(workers), state_(workers << 16) {
    sleepers_.reserve(workers);
  }

  // Any thread. True if a parked worker should be woken.
  bool should_notify() noexcept {
    // seq_cst RMW read: see the lost wake-up argument above.
    uint32_t s = state_.fetch_add(0, std::memory_order_seq_cst);
    return searching(s) == 0 && unparked(s) < workers_;
  }

  // A worker that pushed onto its own ring: no searcher and someone parked.
  // Relaxed: see "a worker pushing onto its own ring" above.
  bool should_notify_hint() const noexcept {
    uint32_t s = state_.load(std::memory_order_relaxed);
    return searching(s) == 0 && unparked(s) < workers_;
  }

  // Any thread. The worker to unpark (counted as unparked and searching from
  // now on), or -1. `except`: the calling worker, never chosen. A worker
  // dispatching I/O readiness inside its own park is still on the sleepers'
  // list; "waking" itself would count it as a searcher while it runs what it
  // just pushed, and leave the others parked.
  int worker_to_notify(int except = -1) {
    if (!should_notify()) return -1;
    lock_guard<mutex> g(m_);
    if (!should_notify()) return -1;
    for (std::size_t i = sleepers_.size(); i-- > 0;) {
      if (static_cast<int>(sleepers_[i]) == except) continue;
      // seq_cst: the same word as should_notify() and the parkers' RMWs.
      state_.fetch_add((1u << 16) | 1u, std::memory_order_seq_cst);
      int w = static_cast<int>(sleepers_[i]);
      sleepers_[i] = sleepers_.back();
      sleepers_.pop_back();
      return w;
    }
    return -1;
  }

  // The worker itself. False if enough workers are searching already.
  bool transition_to_searching() noexcept {
    uint32_t s = state_.load(std::memory_order_seq_cst);
    if (2 * searching(s) >= workers_) return false;
    state_.fetch_add(1, std::memory_order_seq_cst);
    return true;
  }

  // The worker itself, searching, about to run a fiber it found (anywhere).
  // True if it was the last searcher: it then wakes one more.
  bool transition_from_searching() noexcept {
    return searching(state_.fetch_sub(1, std::memory_order_seq_cst)) == 1;
  }

  // The worker itself, before it parks. True if it was the last searcher
  // (it must then re-check every queue).
  bool transition_to_parked(unsigned id, bool is_searching) {
    lock_guard<mutex> g(m_);
    uint32_t dec = (1u << 16) | (is_searching ? 1u : 0u);
    uint32_t prev = state_.fetch_sub(dec, std::memory_order_seq_cst);
    sleepers_.push_back(id);
    return is_searching && searching(prev) == 1;
  }

  // The worker itself, after it wakes. True if it was notified (it is then
  // counted as searching); false if it woke on its own (timer, I/O) and has now
  // taken itself off the sleepers list.
  bool transition_from_parked(unsigned id) {
    lock_guard<mutex> g(m_);
    for (std::size_t i = 0; i < sleepers_.size(); ++i) {
      if (sleepers_[i] == id) {
        sleepers_[i] = sleepers_.back();
        sleepers_.pop_back();
        state_.fetch_add(1u << 16, std::memory_order_seq_cst);
        return false;
      }
    }
    return true;
  }

  // Any thread: every parked worker (shutdown).
  std::vector<unsigned> all_sleepers() {
    lock_guard<mutex> g(m_);
    return sleepers_;
  }

  unsigned num_searching() const noexcept {
    return searching(state_.load(std::memory_order_relaxed));
  }

 private:
  static uint32_t searching(uint32_t s) noexcept { return s & 0xffffu; }
  static uint32_t unparked(uint32_t s) noexcept { return s >> 16; }

  const unsigned workers_;
  std::atomic<uint32_t> state_;
  mutex m_;
  std::vector<unsigned> sleepers_ HERD_GUARDED_BY(m_);
};

}  // namespace herd::rt
