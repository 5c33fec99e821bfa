// The global injection queue: wake-ups from foreign threads, overflow from full
// local queues, and the high/low priority classes. moodycamel's ConcurrentQueue
// normally; under TSan a mutex-guarded deque, because moodycamel's standalone
// fences are invisible to TSan and would drown the report in false positives.
// `count` makes the emptiness check one relaxed load on the scheduler's path.
#pragma once
#include <herd/runtime/sanitizers.hpp>
#include <herd/runtime/thread_safety.hpp>
#include <herd/runtime/fiber.hpp>

#include <atomic>
#include <cstddef>

#if HERD_TSAN
#include <deque>
#include <mutex>
#else
#include <concurrentqueue/concurrentqueue.h>
#endif

namespace herd::rt {

class inject_queue {
 public:
  // Any thread.
  void push(fiber* f) {
    // seq_cst: the idle protocol's "is there work anywhere?" check after a
    // worker parks reads count (pairs with idle::transition_to_parked).
    count_.fetch_add(1, std::memory_order_seq_cst);
#if HERD_TSAN
    lock_guard<mutex> g(m_);
    q_.push_back(f);
#else
    q_.enqueue(f);
#endif
  }
  void push_bulk(fiber** fs, std::size_t n) {
    count_.fetch_add(n, std::memory_order_seq_cst);
#if HERD_TSAN
    lock_guard<mutex> g(m_);
    q_.insert(q_.end(), fs, fs + n);
#else
    q_.enqueue_bulk(fs, n);
#endif
  }
  // Any thread. nullptr when (momentarily) empty.
  fiber* pop() {
    if (empty()) return nullptr;
    fiber* f = nullptr;
#if HERD_TSAN
    lock_guard<mutex> g(m_);
    if (q_.empty()) return nullptr;
    f = q_.front();
    q_.pop_front();
#else
    if (!q_.try_dequeue(f)) return nullptr;
#endif
    count_.fetch_sub(1, std::memory_order_relaxed);
    return f;
  }
  std::size_t pop_bulk(fiber** out, std::size_t max) {
    if (empty()) return 0;
#if HERD_TSAN
    lock_guard<mutex> g(m_);
    std::size_t n = 0;
    while (n < max && !q_.empty()) {
      out[n++] = q_.front();
      q_.pop_front();
    }
#else
    std::size_t n = q_.try_dequeue_bulk(out, max);
#endif
    count_.fetch_sub(n, std::memory_order_relaxed);
    return n;
  }
  // Any thread; relaxed hint, except where noted by the caller.
  bool empty() const noexcept { return count_.load(std::memory_order_relaxed) <= 0; }
  bool empty_seq_cst() const noexcept { return count_.load(std::memory_order_seq_cst) <= 0; }
  std::ptrdiff_t size_approx() const noexcept { return count_.load(std::memory_order_relaxed); }

 private:
  // Signed: a pop may decrement before the matching push's increment is seen.
  std::atomic<std::ptrdiff_t> count_{0};
#if HERD_TSAN
  mutex m_;
  std::deque<fiber*> q_ HERD_GUARDED_BY(m_);
#else
  moodycamel::ConcurrentQueue<fiber*> q_;
#endif
};

}  // namespace herd::rt
