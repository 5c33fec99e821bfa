// A raw runtime fiber for scheduler tests that bypass the actors layer
// (wake_parked_test, wake_policy_test): runs body(self) once; `done` is set on
// the worker after its stack went back to the pool. And a poll for the test's
// own thread (not a fiber), since these tests assert on metrics that settle.
#pragma once
#include <herd/runtime/runtime.hpp>
#include <herd/runtime/sched.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>
#include <thread>

namespace herd_test_raw {

struct task : herd::rt::fiber {
  void (*body)(task*) = nullptr;
  void* arg = nullptr;
  std::atomic<bool> done{false};
};

inline herd::rt::fiber_result run_task(herd::rt::fiber* f) noexcept {
  auto* t = static_cast<task*>(f);
  t->body(t);
  return herd::rt::fiber_result::dead;
}
inline void finish_task(herd::rt::fiber* f) noexcept {
  static_cast<task*>(f)->done.store(true, std::memory_order_release);
}
inline std::size_t describe_task(const herd::rt::fiber*, char*, std::size_t) noexcept { return 0; }
inline constexpr herd::rt::fiber_ops task_ops{&run_task, &finish_task, &describe_task};

// Any thread, or a fiber (then the child runs first, depth-first).
inline void launch(task& t, void (*body)(task*), void* arg) {
  t.ops = &task_ops;
  t.body = body;
  t.arg = arg;
  std::string err;
  if (!herd::rt::prepare_stack(&t, 0, &err)) FAIL("prepare_stack: " << err);
  herd::rt::start(&t);
}

// A runtime's options for these tests: `workers` workers, no start-up
// warnings on stderr.
inline herd::rt::runtime_options quiet_options(unsigned workers) {
  herd::rt::runtime_options o;
  o.workers = workers;
  o.quiet = true;
  return o;
}

// Polls pred every millisecond until it holds or `limit` passed.
template <class P>
bool eventually(P&& pred, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  const auto t0 = std::chrono::steady_clock::now();
  while (!pred()) {
    if (std::chrono::steady_clock::now() - t0 > limit) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the poll's interval
  }
  return true;
}

}  // namespace herd_test_raw
