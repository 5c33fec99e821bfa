// The monitor: a thread that watches for fibers that run too long without
// yielding (BEAM's long_schedule). Every 10 ms, while any worker is awake, it
// samples each worker's switch count; a worker still inside the same fiber as
// at the previous sample is "stuck" — thieves may then take its run-next
// fiber — and a slice of long_schedule_ms or more is recorded for the
// observer. When every worker has stayed parked for two ticks (20 ms) with
// nothing run, the monitor sleeps until woken (an idle node pays two ticks
// per wake-up at most), and the first worker to wake wakes it; a node busy
// with more than fifty requests a second is not woken per request
// (note_parking).
//
// This keeps timestamps off the scheduler's path: a worker only stores which
// fiber it runs (relaxed) and counts switches.
#pragma once
#include <herd/runtime/thread_safety.hpp>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace herd::rt {

struct runtime_impl;

class monitor {
 public:
  explicit monitor(runtime_impl& rt) : rt_(rt) {}
  ~monitor() { stop(); }
  void start();
  void stop();
  // A worker, right before it parks (+1) and right after it wakes (-1).
  void note_parking(int delta) noexcept;

 private:
  void loop();

  runtime_impl& rt_;
  std::thread th_;
  mutex m_;
  std::condition_variable cv_;
  bool stop_ HERD_GUARDED_BY(m_) = false;
  std::atomic<int> parked_{0};
  std::atomic<bool> deep_{false};  // the monitor sleeps until a worker wakes
};

}  // namespace herd::rt
