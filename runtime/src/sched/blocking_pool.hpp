// The pool for blocking calls (BEAM's dirty schedulers). Threads start on
// demand up to a bound and stay until the runtime stops; jobs are FIFO. A job's
// completion wakes its fiber as a foreign thread would (injection queue).
#pragma once
#include <herd/runtime/thread_safety.hpp>
#include <herd/runtime/blocking.hpp>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace herd::rt {

class blocking_pool {
 public:
  explicit blocking_pool(unsigned max_threads) : max_(max_threads ? max_threads : 1) {}
  ~blocking_pool() { shutdown(); }
  // Runs what is queued, then joins every thread. Idempotent.
  void shutdown();

  // Any thread.
  void submit(blocking_job* job);
  // Any thread: runtime housekeeping (no fiber waits for it).
  void submit_task(void (*fn)(void*), void* arg);
  // Jobs submitted and not yet finished (the deterministic clock waits for them).
  uint64_t in_flight() const noexcept { return in_flight_.load(std::memory_order_acquire); }

  // Set by the runtime: how a finished job wakes its fiber.
  void (*complete)(blocking_job*) noexcept = nullptr;

 private:
  void thread_main();

  const unsigned max_;
  mutex m_;
  std::condition_variable cv_;
  std::deque<blocking_job*> q_ HERD_GUARDED_BY(m_);
  struct task {
    void (*fn)(void*);
    void* arg;
  };
  std::deque<task> tasks_ HERD_GUARDED_BY(m_);
  void start_thread_locked() HERD_REQUIRES(m_);
  std::vector<std::thread> threads_;
  unsigned idle_ HERD_GUARDED_BY(m_) = 0;
  unsigned live_ HERD_GUARDED_BY(m_) = 0;
  bool stop_ HERD_GUARDED_BY(m_) = false;
  std::atomic<uint64_t> in_flight_{0};
};

}  // namespace herd::rt
