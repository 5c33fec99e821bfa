// actorbench workloads of links, monitors and deferred replies at scale: each
// adds N relations to one process and takes them away again, so a cost that
// grows with the number of relations a process holds shows as a wall time
// that grows faster than N. The Erlang peer (peers/erlang) does the same.
//
//   forkjoin_monitor N  spawn_monitor N children that end at once; receive N downs
//   links N             trap exits; spawn_link N idle children (link_ms); unlink
//                       and link again every second one (relink_ms); stop all and
//                       receive N exit messages (exits_ms)
//   monitors N          monitor N idle processes (monitor_ms); demonitor and monitor
//                       again every second one (remonitor_ms); 10,000 unrelated
//                       spawn_monitor + down pairs meanwhile (unrelated_10k_ms);
//                       stop all and receive N downs (downs_ms)
//   deferred_calls N    N callers each call a server that answers none of them
//                       until it holds all N, then all (wall_ms; replies_ms from
//                       the server's last call_request to the last caller's end);
//                       minflt_per_caller / bytes_per_caller: page faults and RSS
//                       per caller blocked in its call, once the server holds all
#include "workloads.hpp"

#include "proc_stats.hpp"

#include <herd/actors.hpp>
#include <herd/actors/server.hpp>
#include <herd/runtime/runtime.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace actorbench_relations_msgs {
struct stop {};
struct done {};
struct collected {};
struct dreq {
  uint64_t i;
};
}  // namespace actorbench_relations_msgs

namespace actorbench {
namespace {

using clk = std::chrono::steady_clock;
using namespace actorbench_relations_msgs;

double ms_since(clk::time_point t0) { return std::chrono::duration<double, std::milli>(clk::now() - t0).count(); }

[[noreturn]] void fail(const char* what, uint64_t got, uint64_t want) {
  std::fprintf(stderr, "actorbench: %s: %llu of %llu\n", what, (unsigned long long)got, (unsigned long long)want);
  std::exit(1);
}

void idle_child() {
  herd::receive([](stop) {});
}

void forkjoin_monitor(const config& c) {
  uint64_t n = c.args.at(0), normal = 0;
  auto t0 = clk::now();
  for (uint64_t i = 0; i < n; ++i) herd::spawn_monitor([] {});
  for (uint64_t i = 0; i < n; ++i) herd::receive([&](herd::down&& d) { normal += d.reason.is_normal(); });
  double ms = ms_since(t0);
  if (normal != n) fail("forkjoin_monitor: normal downs", normal, n);
  std::printf("RESULT impl=herd workload=forkjoin_monitor %s n=%llu wall_ms=%.1f\n", common_keys(c).c_str(),
              (unsigned long long)n, ms);
}

void links(const config& c) {
  uint64_t n = c.args.at(0), exits = 0;
  herd::trap_exit(true);
  std::vector<herd::pid> kids;
  kids.reserve(n);
  auto t0 = clk::now();
  for (uint64_t i = 0; i < n; ++i) kids.push_back(herd::spawn_link(idle_child));
  double link_ms = ms_since(t0);
  auto t1 = clk::now();
  for (uint64_t i = 1; i < n; i += 2) {
    herd::unlink(kids[i]);
    herd::link(kids[i]);
  }
  double relink_ms = ms_since(t1);
  auto t2 = clk::now();
  for (herd::pid p : kids) herd::send(p, stop{});
  for (uint64_t i = 0; i < n; ++i) herd::receive([&](herd::exit_msg&& e) { exits += e.reason.is_normal(); });
  double exits_ms = ms_since(t2);
  herd::trap_exit(false);
  if (exits != n) fail("links: normal exits", exits, n);
  std::printf("RESULT impl=herd workload=links %s n=%llu link_ms=%.1f relink_ms=%.1f exits_ms=%.1f wall_ms=%.1f\n",
              common_keys(c).c_str(), (unsigned long long)n, link_ms, relink_ms, exits_ms, ms_since(t0));
}

void monitors(const config& c) {
  uint64_t n = c.args.at(0), downs = 0;
  std::vector<herd::pid> kids;
  std::vector<herd::monitor_ref> refs;
  kids.reserve(n);
  refs.reserve(n);
  auto ts = clk::now();
  for (uint64_t i = 0; i < n; ++i) kids.push_back(herd::spawn(idle_child));
  double spawn_ms = ms_since(ts);
  auto t0 = clk::now();
  for (herd::pid p : kids) refs.push_back(herd::monitor(p));
  double monitor_ms = ms_since(t0);
  auto t1 = clk::now();
  for (uint64_t i = 1; i < n; i += 2) {
    herd::demonitor(refs[i]);
    refs[i] = herd::monitor(kids[i]);
  }
  double remonitor_ms = ms_since(t1);
  auto tu = clk::now();
  for (int i = 0; i < 10'000; ++i) {
    herd::monitor_ref r = herd::spawn_monitor([] {}).second;
    herd::receive(herd::when([r](const herd::down& d) { return d.ref == r; }, [](herd::down&&) {}));
  }
  double unrelated_ms = ms_since(tu);
  auto t2 = clk::now();
  for (herd::pid p : kids) herd::send(p, stop{});
  for (uint64_t i = 0; i < n; ++i) herd::receive([&](herd::down&& d) { downs += d.reason.is_normal(); });
  double downs_ms = ms_since(t2);
  if (downs != n) fail("monitors: normal downs", downs, n);
  std::printf("RESULT impl=herd workload=monitors %s n=%llu spawn_ms=%.1f monitor_ms=%.1f remonitor_ms=%.1f "
              "unrelated_10k_ms=%.1f downs_ms=%.1f wall_ms=%.1f\n",
              common_keys(c).c_str(), (unsigned long long)n, spawn_ms, monitor_ms, remonitor_ms, unrelated_ms,
              downs_ms, ms_since(t0));
}

struct sched_counts {
  uint64_t parks = 0, steals = 0, compact_waits = 0;
};

sched_counts read_sched_counts() {
  sched_counts c;
  herd::rt::runtime_metrics m;
  if (!herd::rt::current_metrics(m)) return c;
  c.compact_waits = m.compact_waits;
  for (const auto& w : m.workers) {
    c.parks += w.parks;
    c.steals += w.steals;
  }
  return c;
}

// Holds every caller's `from` until it has all n, then answers them all.
struct deferred_server : herd::server<deferred_server> {
  using calls = herd::types<dreq>;
  deferred_server(uint64_t n, herd::pid coord) : n(n), coord(coord) { waiting.reserve(n); }
  herd::noreply_t handle_call(const dreq&, const herd::from& f) {
    waiting.push_back(f);
    if (waiting.size() == n) {
      herd::send(coord, collected{});
      for (const herd::from& w : waiting) herd::reply(w, herd::ok{});
      waiting.clear();
    }
    return herd::noreply;
  }
  uint64_t n;
  herd::pid coord;
  std::vector<herd::from> waiting;
};

void deferred_calls(const config& c) {
  uint64_t n = c.args.at(0);
  herd::pid me = herd::self();
  auto s = herd::start_server<deferred_server>(n, me);
  proc_stats before = read_proc_stats();
  const sched_counts sched_before = read_sched_counts();
  auto t0 = clk::now();
  const herd::spawn_options caller_opts{.compact_stack = c.compact};
  for (uint64_t i = 0; i < n; ++i)
    herd::spawn(caller_opts, [s, me, i] {
      herd::call<herd::ok>(s, dreq{i}, herd::infinity);
      herd::send(me, done{});
    });
  herd::receive([](collected) {});
  // Every caller is parked in its call now (the server answers after this).
  proc_stats held = read_proc_stats();
  auto t1 = clk::now();
  for (uint64_t i = 0; i < n; ++i) herd::receive([](done) {});
  double replies_ms = ms_since(t1), wall_ms = ms_since(t0);
  const sched_counts sched_after = read_sched_counts();
  (void)herd::stop_server(s);
  // Worker parks and steals per caller: how often a worker ran dry and was
  // woken again (each a futex wait and wake), the churn a busy wait removes.
  std::printf("RESULT impl=herd workload=deferred_calls %s callers=%s n=%llu replies_ms=%.1f wall_ms=%.1f "
              "minflt_per_caller=%.2f bytes_per_caller=%.0f parks_per_caller=%.3f steals_per_caller=%.3f slot_waits_per_caller=%.3f\n",
              common_keys(c).c_str(), c.compact ? "compact" : "own_stack", (unsigned long long)n, replies_ms, wall_ms,
              double(held.minflt - before.minflt) / double(n),
              double(int64_t(held.rss_bytes) - int64_t(before.rss_bytes)) / double(n),
              double(sched_after.parks - sched_before.parks) / double(n),
              double(sched_after.steals - sched_before.steals) / double(n),
              double(sched_after.compact_waits - sched_before.compact_waits) / double(n));
}

}  // namespace

bool run_relations_workload(const config& c) {
  if (c.workload == "forkjoin_monitor") forkjoin_monitor(c);
  else if (c.workload == "links") links(c);
  else if (c.workload == "monitors") monitors(c);
  else if (c.workload == "deferred_calls") deferred_calls(c);
  else return false;
  return true;
}

}  // namespace actorbench
