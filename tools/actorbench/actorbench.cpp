// actorbench WORKLOAD ARGS... [--workers N] [--hibernate] [--busy-wait-us US]
// Prints one `RESULT impl=herd workload=<w> key=value ...` line per result.
// The RSS and page-fault baseline is taken before the node is constructed,
// and a `node_start` line reports what starting the node cost with 0 actors.
#include "proc_stats.hpp"
#include "workloads.hpp"

#include <herd/actors.hpp>
#include <herd/runtime/runtime.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

int usage(const char* why) {
  std::fprintf(stderr,
               "actorbench: %s\n"
               "usage: actorbench WORKLOAD ARGS... [--workers N] [--hibernate] [--busy-wait-us US]\n"
               "  skynet N | spawn_idle N [--hibernate] | pingpong RTS | pingpong_many PAIRS RTS |\n"
               "  ring N ROUNDS | fanin SENDERS PER_SENDER | call CALLS | restart RESTARTS |\n"
               "  forkjoin_monitor N | links N | monitors N | deferred_calls N [--compact] |\n"
               "  fanout SUBSCRIBERS ROUNDS WORK (runs at 1 worker, then at N; prints the speedup) |\n"
               "  table read90|write50|counter|counter_spread [--procs P] [--keys K] [--ops N] [--type set|ordered_set] |\n"
               "  pg_fanout [--members M] [--messages N] | pg_join [--members M]\n",
               why);
  return 2;
}

bool parse_u64(const char* s, uint64_t& out) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (errno || !end || *end || s[0] == '-' || s[0] == 0) return false;
  out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using actorbench::config;
  if (argc < 2) return usage("no workload given");
  config c;
  c.workload = argv[1];
  if (c.workload == "table") return actorbench::run_table(argc, argv);  // named options, its own node
  if (c.workload == "pg_fanout") return actorbench::run_pg_fanout(argc, argv);
  if (c.workload == "pg_join") return actorbench::run_pg_join(argc, argv);
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--workers") {
      uint64_t w;
      if (i + 1 >= argc || !parse_u64(argv[++i], w) || w == 0 || w > 256) return usage("bad --workers");
      c.workers = static_cast<unsigned>(w);
    } else if (a == "--busy-wait-us") {
      // node_options::busy_wait (BEAM's +sbwt): off unless given.
      uint64_t us;
      if (i + 1 >= argc || !parse_u64(argv[++i], us) || us > uint64_t(herd::rt::max_busy_wait.count()))
        return usage(("bad --busy-wait-us (0.." + std::to_string(herd::rt::max_busy_wait.count()) + ")").c_str());
      c.busy_wait_us = us;
    } else if (a == "--hibernate") {
      c.hibernate = true;
    } else if (a == "--compact") {
      c.compact = true;
    } else {
      uint64_t v;
      if (!parse_u64(argv[i], v)) return usage(("bad argument '" + a + "'").c_str());
      c.args.push_back(v);
    }
  }
  size_t want = 0;
  if (c.workload == "skynet" || c.workload == "spawn_idle" || c.workload == "pingpong" ||
      c.workload == "call" || c.workload == "restart" || c.workload == "forkjoin_monitor" ||
      c.workload == "links" || c.workload == "monitors" || c.workload == "deferred_calls")
    want = 1;
  else if (c.workload == "pingpong_many" || c.workload == "ring" || c.workload == "fanin") want = 2;
  else if (c.workload == "fanout") want = 3;
  else return usage(("unknown workload '" + c.workload + "'").c_str());
  if (c.args.size() != want) return usage("wrong number of arguments");
  if (c.hibernate && c.workload != "spawn_idle") return usage("--hibernate is for spawn_idle");
  if (c.compact && c.workload != "deferred_calls") return usage("--compact is for deferred_calls");
  for (uint64_t a : c.args)
    if (a == 0) return usage("arguments must be positive");
  if (c.workload == "fanout") return actorbench::run_fanout(c);  // its own nodes, one per worker count

  size_t max_actors = 1 << 20;
  if (c.workload == "spawn_idle" && c.args[0] + 1024 > max_actors) max_actors = c.args[0] + 1024;
  if (c.workload == "ring" && c.args[0] + 1024 > max_actors) max_actors = c.args[0] + 1024;
  bool holds_n = c.workload == "links" || c.workload == "monitors" || c.workload == "deferred_calls";
  if (holds_n && c.args[0] + 1024 > max_actors) max_actors = c.args[0] + 1024;

  actorbench::proc_stats base = actorbench::read_proc_stats();
  herd::node n({.workers = c.workers, .max_actors = max_actors, .busy_wait = std::chrono::microseconds(c.busy_wait_us)});
  herd::exit_reason r = n.run([&] {
    actorbench::proc_stats started = actorbench::read_proc_stats();
    std::printf("RESULT impl=herd workload=node_start %s max_actors=%zu rss_base_kb=%llu rss_started_kb=%llu "
                "bytes_per_slot=%.2f minflt=%llu\n",
                actorbench::common_keys(c).c_str(), max_actors, (unsigned long long)(base.rss_bytes / 1024),
                (unsigned long long)(started.rss_bytes / 1024),
                double(int64_t(started.rss_bytes) - int64_t(base.rss_bytes)) / double(max_actors),
                (unsigned long long)(started.minflt - base.minflt));
    actorbench::run_workload(c);
  });
  std::fflush(stdout);
  if (!r.is_normal()) {
    std::fprintf(stderr, "actorbench: the root process failed: %s\n", r.to_string().c_str());
    return 1;
  }
  return 0;
}
