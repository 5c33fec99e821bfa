#include "sched/blocking_pool.hpp"

#include "context/overflow_handler.hpp"

#include <pthread.h>

namespace herd::rt {

void blocking_pool::shutdown() {
  {
    lock_guard<mutex> g(m_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void blocking_pool::start_thread_locked() {
  ++live_;
  threads_.emplace_back([this] {
    pthread_setname_np(pthread_self(), "herd-blocking");
    thread_main();
  });
}

void blocking_pool::submit(blocking_job* job) {
  in_flight_.fetch_add(1, std::memory_order_acq_rel);
  unique_lock g(m_);
  q_.push_back(job);
  if (idle_ == 0 && live_ < max_) {
    start_thread_locked();
    return;
  }
  g.unlock();
  cv_.notify_one();
}

void blocking_pool::submit_task(void (*fn)(void*), void* arg) {
  unique_lock g(m_);
  tasks_.push_back({fn, arg});
  if (idle_ == 0 && live_ < max_) {
    start_thread_locked();
    return;
  }
  g.unlock();
  cv_.notify_one();
}

void blocking_pool::thread_main() {
  install_thread_altstack();
  unique_lock g(m_);
  for (;;) {
    ++idle_;
    while (!stop_ && q_.empty() && tasks_.empty()) cv_.wait(g.native());
    --idle_;
    if (!tasks_.empty()) {
      task t = tasks_.front();
      tasks_.pop_front();
      g.unlock();
      t.fn(t.arg);
      g.lock();
      continue;
    }
    if (stop_ && q_.empty() && tasks_.empty()) break;
    blocking_job* job = q_.front();
    q_.pop_front();
    g.unlock();
    job->run(job);
    complete(job);
    in_flight_.fetch_sub(1, std::memory_order_acq_rel);
    g.lock();
  }
  --live_;
  g.unlock();
  remove_thread_altstack();
}

}  // namespace herd::rt
