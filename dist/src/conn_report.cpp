// A connection's numbers as the observer's `nodes` view shows them, and the
// wake-up of senders parked on its queue.
#include <herd/runtime/sched.hpp>

#include <algorithm>
#include <chrono>

#include "state.hpp"

namespace herd::dist::detail {

using namespace std::chrono;
using clk = steady_clock;

void conn_counters::wake_waiters(bool and_close) noexcept {
  std::vector<rt::fiber*> w;
  {
    rt::lock_guard g(mu);
    if (and_close) closed = true;
    w.swap(waiters);
    has_waiters.store(false, std::memory_order_relaxed);
  }
  // After unlocking, as memory_transport does: a waiter that left on its
  // own meanwhile gets a spurious wake-up, which every parker tolerates
  // (its fiber stays readable a grace period after it ends).
  for (rt::fiber* f : w) rt::wake(f);
}

herd::detail::remote_nodes_report nodes_report() {
  struct row {
    std::string node;
    bool up;
    std::shared_ptr<conn_counters> c;
  };
  herd::detail::remote_nodes_report out;
  std::vector<row> rows;
  {
    rt::lock_guard g(state().mu);
    if (!state().running) return out;
    out.this_node = state().me.name;
    for (auto& [n, e] : state().conns) rows.push_back({n, e.up, e.counters});
  }
  const int64_t now = clk::now().time_since_epoch().count();
  for (auto& r : rows) {
    herd::detail::remote_node_stats s;
    s.node = r.node;
    s.up = r.up;
    // Frames queue up while a connection is still being made, too.
    if (r.c) s.queued_bytes = r.c->queued_bytes.load(std::memory_order_relaxed);
    if (r.c && r.up) {
      s.bytes_in = r.c->bytes_in.load(std::memory_order_relaxed);
      s.bytes_out = r.c->bytes_out.load(std::memory_order_relaxed);
      s.messages_in = r.c->messages_in.load(std::memory_order_relaxed);
      s.messages_out = r.c->messages_out.load(std::memory_order_relaxed);
      s.queued_frames = r.c->queued_frames.load(std::memory_order_relaxed);
      auto age = duration_cast<milliseconds>(clk::duration(std::max<int64_t>(0, now - r.c->last_received_ns.load(std::memory_order_relaxed))));
      s.last_received_ms = age.count();
      s.ticks_missed = uint64_t(age.count() / std::max<int64_t>(1, r.c->tick_interval_ms.load(std::memory_order_relaxed)));
    }
    out.nodes.push_back(std::move(s));
  }
  return out;
}

}  // namespace herd::dist::detail
