// actorbench fanout SUBSCRIBERS ROUNDS WORK [--workers N]: one publisher sends
// each round's message to every subscriber; a subscriber spins WORK steps of
// a xorshift per message (a chat member formatting a line) and acks. The
// publisher keeps four rounds in flight. It is how a chat room's broadcast
// loads a node: every wake-up comes from one actor on one worker, so the
// other workers get work only if that worker wakes them.
//
// Runs the workload on a node of 1 worker, then on one of N (when N > 1), and
// prints per run msgs/s and each worker thread's CPU (utime + stime of the
// threads named herd-w<N>, from /proc/self/task/<tid>/stat) over the measured
// interval, then `speedup` = msgs/s at N over msgs/s at 1.
#include "workloads.hpp"

#include <herd/actors.hpp>

#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace actorbench_fanout_msgs {
struct post {
  uint64_t round;
};
struct ack {};
}  // namespace actorbench_fanout_msgs

namespace actorbench {
namespace {

using clk = std::chrono::steady_clock;
using namespace actorbench_fanout_msgs;

// CPU seconds used so far by each worker thread, keyed by its index. A
// thread started from a worker inherits its name: of several herd-w<N>, the
// worker is the first created (the lowest tid).
std::map<unsigned, double> worker_cpu_s() {
  std::map<unsigned, double> out;
  std::map<unsigned, long> tid_of;
  DIR* d = opendir("/proc/self/task");
  if (!d) return out;
  const double tick = double(sysconf(_SC_CLK_TCK));
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::string base = std::string("/proc/self/task/") + e->d_name;
    char comm[64] = {};
    if (FILE* f = std::fopen((base + "/comm").c_str(), "r")) {
      if (!std::fgets(comm, sizeof comm, f)) comm[0] = 0;
      std::fclose(f);
    }
    unsigned idx = 0;
    if (std::sscanf(comm, "herd-w%u", &idx) != 1) continue;
    const long tid = std::atol(e->d_name);
    if (auto it = tid_of.find(idx); it != tid_of.end() && it->second < tid) continue;
    tid_of[idx] = tid;
    FILE* f = std::fopen((base + "/stat").c_str(), "r");
    if (!f) continue;
    char buf[1024];
    size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    std::fclose(f);
    // Fields 14 (utime) and 15 (stime), after the parenthesised command name.
    const char* p = std::strrchr(buf, ')');
    unsigned long long ut = 0, st = 0;
    if (p && std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) == 2)
      out[idx] = double(ut + st) / tick;
  }
  closedir(d);
  return out;
}

uint64_t spin(uint64_t x, uint64_t steps) {
  for (uint64_t i = 0; i < steps; ++i) x ^= x << 13, x ^= x >> 7, x ^= x << 17;
  return x;
}

struct run_figures {
  double msgs_per_s = 0;
};

run_figures run_once(unsigned workers, uint64_t subs, uint64_t rounds, uint64_t work) {
  run_figures fig;
  herd::node n({.workers = workers});
  herd::exit_reason r = n.run([&] {
    herd::pid me = herd::self();
    std::vector<herd::pid> members;
    members.reserve(subs);
    for (uint64_t i = 0; i < subs; ++i)
      members.push_back(herd::spawn([me, work, rounds] {
        uint64_t x = 0x9E3779B97F4A7C15ull;
        for (uint64_t k = 0; k < rounds; ++k) {
          herd::receive([&](post p) { x = spin(x ^ p.round, work); });
          herd::send(me, ack{});
        }
        if (x == 0) std::abort();  // keeps the spin from being optimised away
      }));
    constexpr uint64_t window = 4;
    uint64_t acks = 0;
    auto cpu0 = worker_cpu_s();
    auto t0 = clk::now();
    for (uint64_t k = 0; k < rounds; ++k) {
      while (k >= window && acks < (k - window + 1) * subs) herd::receive([&](ack) { ++acks; });
      for (herd::pid m : members) herd::send(m, post{k});
    }
    while (acks < rounds * subs) herd::receive([&](ack) { ++acks; });
    const double s = std::chrono::duration<double>(clk::now() - t0).count();
    auto cpu1 = worker_cpu_s();
    fig.msgs_per_s = double(subs * rounds) / s;
    std::string cpu;
    for (auto& [w, c] : cpu1) {
      char b[64];
      std::snprintf(b, sizeof b, " w%u_cpu_pct=%.0f", w, 100.0 * (c - cpu0[w]) / s);
      cpu += b;
    }
    std::printf("RESULT impl=herd workload=fanout workers=%u subscribers=%llu rounds=%llu work=%llu "
                "wall_ms=%.1f msgs_per_s=%.0f%s\n",
                workers, (unsigned long long)subs, (unsigned long long)rounds, (unsigned long long)work,
                s * 1000.0, fig.msgs_per_s, cpu.c_str());
  });
  std::fflush(stdout);
  if (!r.is_normal()) {
    std::fprintf(stderr, "actorbench: fanout: the root process failed: %s\n", r.to_string().c_str());
    std::exit(1);
  }
  return fig;
}

}  // namespace

int run_fanout(const config& c) {
  const uint64_t subs = c.args.at(0), rounds = c.args.at(1), work = c.args.at(2);
  run_figures one = run_once(1, subs, rounds, work);
  if (c.workers == 1) return 0;
  run_figures many = run_once(c.workers, subs, rounds, work);
  std::printf("RESULT impl=herd workload=fanout_speedup workers=%u subscribers=%llu speedup=%.2f\n", c.workers,
              (unsigned long long)subs, many.msgs_per_s / one.msgs_per_s);
  return 0;
}

}  // namespace actorbench
