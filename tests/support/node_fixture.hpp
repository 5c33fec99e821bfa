// Helpers for the actors layer's semantic tests.
//
//   auto r = herd::test::run_node(herd::test::opts(workers), [&] { ... });
//
// runs the body as the root process of a fresh node and checks afterwards that
// no message leaked (node::live_messages() == 0) and that every process that
// was spawned has exited.
//
// Catch2 v2 is not thread-safe: assertions belong on the test thread. Bodies
// record what they saw in variables (atomics where several processes write)
// and the test checks them after run() returns.
#pragma once
#include <herd/actors.hpp>
#include <herd/actors/introspect.hpp>
#include <herd/runtime/clock.hpp>
#include <herd/runtime/runtime.hpp>

#include <catch2/catch.hpp>

#include "support/scale.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <thread>
#include <utility>

namespace herd::test {

using clk = std::chrono::steady_clock;

inline double ms_since(clk::time_point t0) {
  return std::chrono::duration<double, std::milli>(clk::now() - t0).count();
}

inline node_options opts(unsigned workers) {
  node_options o;
  o.workers = workers;
  o.quiet = true;
  return o;
}

inline node_options deterministic_opts() {
  node_options o;
  o.deterministic = true;
  o.quiet = true;
  return o;
}

// Checks a finished node: no message is left alive, every spawned process
// exited. (messages_before tells a leak of this node from one of an earlier
// test: it is shown when the check fails.)
inline void check_clean(const node& n, std::ptrdiff_t messages_before) {
  INFO("live messages before the node ran: " << messages_before);
  CHECK(node::live_messages() == 0);
  node_stats s = n.stats();
  CHECK(s.live_processes == 0);
  CHECK(s.spawned == s.exited);
}

// Runs body as the root of a node made with `o`, checks the node is clean
// afterwards and returns the root's exit reason.
template <class F>
exit_reason run_node(const node_options& o, F&& body, const spawn_options& so = {}) {
  std::ptrdiff_t before = node::live_messages();
  node n(o);
  exit_reason r = n.run(std::forward<F>(body), so);
  check_clean(n, before);
  return r;
}

// The same, with access to the node (for its metrics) from the body:
// body(node&).
template <class F>
exit_reason run_node_with(const node_options& o, F&& body) {
  std::ptrdiff_t before = node::live_messages();
  node n(o);
  exit_reason r = n.run([&] { body(n); });
  check_clean(n, before);
  return r;
}

// Armed timers on every worker's wheel (receive timeouts, sleeps, send_after).
inline uint64_t armed_timers(rt::runtime& r) {
  uint64_t sum = 0;
  for (const auto& w : r.metrics().workers) sum += w.timers;
  return sum;
}

// From a process: sleeps 1 ms at a time until pred() holds or `limit` passed
// (wall time). Returns pred().
template <class P>
bool eventually(P&& pred, std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
  auto t0 = clk::now();
  while (!pred()) {
    if (clk::now() - t0 > limit) return pred();
    herd::sleep(std::chrono::milliseconds(1));  // the poll's interval
  }
  return true;
}

// Any thread: p is parked (waiting in receive, sleep or a socket call, or hibernated).
inline bool parked(pid p) {
  auto i = introspect::process_info(p);
  return i && (i->row.state == introspect::status::waiting || i->row.state == introspect::status::hibernated);
}

// From a process: waits until p is hibernated (its stack released, waiting
// for a message), as its status in the process table shows it.
inline bool eventually_hibernated(pid p, std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
  return eventually([p] {
    auto i = introspect::process_info(p);
    return i && i->row.hibernated;
  }, limit);
}

// From a process: waits until p is parked in receive (or sleep) with its
// stack: status waiting, not hibernated.
inline bool eventually_waiting(pid p, std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
  return eventually([p] {
    auto i = introspect::process_info(p);
    return i && i->row.state == introspect::status::waiting;
  }, limit);
}

// From a process: waits until p is parked (in receive or sleep: status
// waiting or hibernated) with at least `queued` messages in its mailbox.
inline bool eventually_parked(pid p, uint64_t queued = 0,
                              std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
  return eventually([p, queued] {
    auto i = introspect::process_info(p);
    return i && parked(p) && i->row.mailbox >= queued;
  }, limit);
}

// From a process: waits until p has ended and left the process table: what
// it sent while it ran has been sent (its exit signals and downs go out just
// after; wait for current_node_stats().exited to count it for those).
inline bool eventually_gone(pid p, std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
  return eventually([p] { return !introspect::process_info(p).has_value(); }, limit);
}

// From a plain thread (not a worker): polls pred every millisecond until it
// holds or `limit` passed. Returns pred().
template <class P>
bool eventually_on_thread(P&& pred, std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
  auto t0 = clk::now();
  while (!pred()) {
    if (clk::now() - t0 > limit) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the poll's interval
  }
  return true;
}

// From a process: waits until only `n` processes are alive (the caller
// counts), e.g. after telling children to stop.
inline bool wait_live(std::size_t n, std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
  return eventually([n] { return current_node_stats().live_processes <= n; }, limit);
}

// An RAII probe: counts its destructions (moved-from probes do not count).
struct dtor_probe {
  std::atomic<int>* count;
  explicit dtor_probe(std::atomic<int>& c) : count(&c) {}
  dtor_probe(dtor_probe&& o) noexcept : count(std::exchange(o.count, nullptr)) {}
  dtor_probe(const dtor_probe&) = delete;
  dtor_probe& operator=(const dtor_probe&) = delete;
  dtor_probe& operator=(dtor_probe&&) = delete;
  ~dtor_probe() {
    if (count) count->fetch_add(1);
  }
};

}  // namespace herd::test

// Generates the worker counts scheduler tests run at (1, 2, 4).
#define HERD_WORKERS()                                                           \
  GENERATE(Catch::Generators::from_range(std::begin(::herd::test::worker_counts), \
                                         std::end(::herd::test::worker_counts)))
