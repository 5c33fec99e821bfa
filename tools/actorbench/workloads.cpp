#include "workloads.hpp"

#include "proc_stats.hpp"

#include <herd/actors.hpp>
#include <herd/runtime/sched.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <vector>

namespace actorbench {
namespace {

using clk = std::chrono::steady_clock;
using namespace std::chrono_literals;

double ms_since(clk::time_point t0) {
  return std::chrono::duration<double, std::milli>(clk::now() - t0).count();
}

struct stop {};
struct go {};
struct value {
  uint64_t v;
};

// ---- skynet: 10-ary tree of processes, leaves send their number up.
void skynet_node(herd::pid parent, uint64_t num, uint64_t size) {
  if (size == 1) {
    herd::send(parent, value{num});
    return;
  }
  herd::pid me = herd::self();
  uint64_t step = size / 10;
  for (uint64_t i = 0; i < 10; ++i) herd::spawn(skynet_node, me, num + i * step, step);
  uint64_t sum = 0;
  for (int i = 0; i < 10; ++i) herd::receive([&](value v) { sum += v.v; });
  herd::send(parent, value{sum});
}

void skynet(const config& c) {
  uint64_t n = c.args.at(0);
  auto t0 = clk::now();
  herd::spawn(skynet_node, herd::self(), uint64_t{0}, n);
  uint64_t sum = herd::receive([](value v) { return v.v; });
  double ms = ms_since(t0);
  std::printf("RESULT impl=herd workload=skynet %s n=%llu sum=%llu wall_ms=%.1f\n", common_keys(c).c_str(),
              (unsigned long long)n, (unsigned long long)sum, ms);
}

// ---- spawn_idle: N processes blocked in receive (or hibernated).
std::atomic<uint64_t> g_started{0};

void wait_live(size_t target) {
  while (herd::current_node_stats().live_processes > target) herd::sleep(1ms);
}

void spawn_idle(const config& c) {
  uint64_t n = c.args.at(0);
  std::vector<herd::pid> pids;
  pids.reserve(n);
  size_t base_live = herd::current_node_stats().live_processes;
  proc_stats before = read_proc_stats();
  auto t0 = clk::now();
  if (c.hibernate) {
    for (uint64_t i = 0; i < n; ++i)
      pids.push_back(herd::spawn([]() -> herd::hibernation {
        g_started.fetch_add(1, std::memory_order_relaxed);
        return herd::hibernated([] { herd::receive([](stop) {}); });
      }));
  } else {
    for (uint64_t i = 0; i < n; ++i)
      pids.push_back(herd::spawn([] {
        g_started.fetch_add(1, std::memory_order_relaxed);
        herd::receive([](stop) {});
      }));
  }
  // Spawning runs each child until it blocks (depth-first); a child whose
  // spawner was stolen meanwhile may still be starting: wait for all.
  while (g_started.load(std::memory_order_relaxed) < n) herd::yield();
  double started_ms = ms_since(t0);
  proc_stats after = read_proc_stats();
  auto t1 = clk::now();
  for (herd::pid p : pids) herd::send(p, stop{});
  wait_live(base_live);
  double stop_ms = ms_since(t1);
  double bpa = double(int64_t(after.rss_bytes) - int64_t(before.rss_bytes)) / double(n);
  double pte = double(int64_t(after.pte_bytes) - int64_t(before.pte_bytes)) / double(n);
  // The pid vector (8 bytes per actor) is the benchmark's own, not an actor's.
  std::printf(
      "RESULT impl=herd workload=spawn_idle %s n=%llu hibernate=%d spawn_all_started_ms=%.1f "
      "bytes_per_actor=%.0f pte_bytes_per_actor=%.0f stop_all_exited_ms=%.1f minflt_per_actor=%.2f guard=%s\n",
      common_keys(c).c_str(), (unsigned long long)n, c.hibernate ? 1 : 0, started_ms, bpa - 8.0, pte, stop_ms,
      double(after.minflt - before.minflt) / double(n), herd::rt::guard_mechanism());
}

// ---- pingpong: two processes bounce a counter.
void pingpong(const config& c) {
  uint64_t rts = c.args.at(0);
  herd::pid me = herd::self();
  herd::pid ponger = herd::spawn([me] {
    for (;;) {
      uint64_t v = herd::receive([](value x) { return x.v; });
      herd::send(me, value{v});
      if (v == 0) return;
    }
  });
  auto t0 = clk::now();
  for (uint64_t i = rts; i > 0; --i) {
    herd::send(ponger, value{i - 1});
    herd::receive([](value) {});
  }
  double ms = ms_since(t0);
  std::printf("RESULT impl=herd workload=pingpong %s rts=%llu ns_per_rt=%.1f\n", common_keys(c).c_str(),
              (unsigned long long)rts, ms * 1e6 / double(rts));
}

// ---- pingpong_many: P pairs bouncing at once.
void pingpong_many(const config& c) {
  uint64_t pairs = c.args.at(0), rts = c.args.at(1);
  herd::pid me = herd::self();
  std::vector<herd::pid> pingers;
  for (uint64_t i = 0; i < pairs; ++i) {
    herd::pid ponger = herd::spawn([] {
      herd::pid peer;
      herd::receive([&](herd::pid p) { peer = p; });
      for (;;) {
        uint64_t v = herd::receive([](value x) { return x.v; });
        herd::send(peer, value{v});
        if (v == 0) return;
      }
    });
    pingers.push_back(herd::spawn([me, ponger, rts] {
      herd::send(ponger, herd::self());
      herd::receive([](go) {});
      for (uint64_t k = rts; k > 0; --k) {
        herd::send(ponger, value{k - 1});
        herd::receive([](value) {});
      }
      herd::send(me, stop{});
    }));
  }
  auto t0 = clk::now();
  for (herd::pid p : pingers) herd::send(p, go{});
  for (uint64_t i = 0; i < pairs; ++i) herd::receive([](stop) {});
  double ms = ms_since(t0);
  double msgs = double(pairs) * double(rts) * 2;
  std::printf("RESULT impl=herd workload=pingpong_many %s pairs=%llu rts=%llu wall_ms=%.1f msgs_per_s=%.0f\n",
              common_keys(c).c_str(), (unsigned long long)pairs, (unsigned long long)rts, ms,
              msgs / (ms / 1000.0));
}

// ---- ring: N processes in a ring, one token around M times.
void ring(const config& c) {
  uint64_t n = c.args.at(0), rounds = c.args.at(1);
  herd::pid me = herd::self();
  auto t0 = clk::now();
  // Each member forwards to `next`; the last one forwards back to the root.
  herd::pid next = me;
  for (uint64_t i = 0; i < n - 1; ++i) {
    next = herd::spawn([next] {
      for (;;) {
        uint64_t v = herd::receive([](value x) { return x.v; });
        herd::send(next, value{v});
        if (v == 0) return;
      }
    });
  }
  double spawn_ms = ms_since(t0);
  uint64_t hops = n * rounds;
  auto t1 = clk::now();
  // The root is member n; it re-injects the token `rounds` times. The token
  // value counts down the remaining laps so members know when to stop.
  for (uint64_t r = rounds; r > 0; --r) {
    herd::send(next, value{r - 1});
    herd::receive([](value) {});
  }
  double ms = ms_since(t1);
  std::printf("RESULT impl=herd workload=ring %s n=%llu rounds=%llu spawn_ms=%.1f hops_per_s=%.0f\n",
              common_keys(c).c_str(), (unsigned long long)n, (unsigned long long)rounds, spawn_ms,
              double(hops) / (ms / 1000.0));
}

// ---- fanin: S senders x M messages to one receiver.
struct fan_msg {
  uint32_t worker;
};

void fanin(const config& c) {
  uint64_t senders = c.args.at(0), per = c.args.at(1);
  herd::pid me = herd::self();
  std::vector<herd::pid> ss;
  for (uint64_t i = 0; i < senders; ++i)
    ss.push_back(herd::spawn([me, per] {
      herd::receive([](go) {});
      for (uint64_t k = 0; k < per; ++k) herd::send(me, fan_msg{herd::rt::worker_index()});
    }));
  uint64_t total = senders * per, cross = 0;
  auto t0 = clk::now();
  for (herd::pid p : ss) herd::send(p, go{});
  for (uint64_t i = 0; i < total; ++i)
    herd::receive([&](fan_msg m) { cross += m.worker != herd::rt::worker_index(); });
  double ms = ms_since(t0);
  std::printf("RESULT impl=herd workload=fanin %s senders=%llu per_sender=%llu wall_ms=%.1f msgs_per_s=%.0f "
              "cross_core_pct=%.1f\n",
              common_keys(c).c_str(), (unsigned long long)senders, (unsigned long long)per, ms,
              double(total) / (ms / 1000.0), 100.0 * double(cross) / double(total));
}

}  // namespace

std::string common_keys(const config& c) {
  std::string k = "workers=" + std::to_string(c.workers);
  if (c.busy_wait_us) k += " busy_wait_us=" + std::to_string(c.busy_wait_us);
  return k;
}

void run_workload(const config& c) {
  if (c.workload == "skynet") skynet(c);
  else if (c.workload == "spawn_idle") spawn_idle(c);
  else if (c.workload == "pingpong") pingpong(c);
  else if (c.workload == "pingpong_many") pingpong_many(c);
  else if (c.workload == "ring") ring(c);
  else if (c.workload == "fanin") fanin(c);
  else if (!run_failure_workload(c)) run_relations_workload(c);
}

}  // namespace actorbench
