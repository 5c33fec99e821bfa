// Helpers for the stress tests: run a node, then check what it left behind.
//
// Catch2 v2 assertions are not thread-safe and processes run on worker threads: processes
// only record what they saw (plain variables written before the root returns, or atomics),
// and the test asserts after node::run() has returned.
#pragma once
#include "support/scale.hpp"

#include <herd/actors.hpp>
#include <herd/runtime/runtime.hpp>
#include <herd/runtime/sched.hpp>

#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <utility>

namespace herd::stress {

using clk = std::chrono::steady_clock;

inline double ms_since(clk::time_point t0) {
  return std::chrono::duration<double, std::milli>(clk::now() - t0).count();
}

// What a node left behind once run() returned.
struct run_result {
  herd::exit_reason reason;
  herd::node_stats stats;
  std::ptrdiff_t live_messages = -1;
  uint64_t stacks_in_use = ~uint64_t(0);
  uint64_t stacks_carved = 0;
  std::string guard;
  unsigned workers = 0;
  double wall_ms = 0;
};

inline herd::node_options options(unsigned workers) {
  herd::node_options o;
  o.workers = workers;
  o.quiet = true;
  return o;
}

template <class F>
run_result run_node(const herd::node_options& o, F&& root) {
  run_result r;
  herd::node n(o);
  r.workers = n.runtime().workers();
  const auto t0 = clk::now();
  r.reason = n.run(std::forward<F>(root));
  r.wall_ms = ms_since(t0);
  r.stats = n.stats();
  const herd::rt::runtime_metrics m = n.runtime().metrics();
  r.stacks_in_use = m.stacks_in_use;
  r.stacks_carved = m.stacks_carved;
  r.guard = m.guard;
  r.live_messages = herd::node::live_messages();
  return r;
}

// The leak check every stress test ends with. `spawned`: the exact number of processes the
// test spawned, root included (0: do not check).
inline void check_clean(const run_result& r, std::size_t spawned) {
  INFO("workers=" << r.workers << " wall_ms=" << r.wall_ms << " guard=" << r.guard << " stacks_carved=" << r.stacks_carved);
  CHECK(r.reason.is_normal());
  CHECK(r.live_messages == 0);
  CHECK(r.stacks_in_use == 0);
  CHECK(r.stats.live_processes == 0);
  CHECK(r.stats.spawned == r.stats.exited);
  if (spawned) CHECK(r.stats.spawned == spawned);
}

// VmRSS of this process in bytes (0 if unreadable).
inline std::size_t rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string key;
  while (f >> key) {
    if (key == "VmRSS:") {
      std::size_t kb = 0;
      f >> kb;
      return kb * 1024;
    }
    std::getline(f, key);
  }
  return 0;
}

// User + system CPU time of this process, in microseconds.
inline int64_t cpu_us() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return int64_t(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1'000'000 + u.ru_utime.tv_usec + u.ru_stime.tv_usec;
}

}  // namespace herd::stress
