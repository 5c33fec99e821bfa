// actorbench pg_fanout --members M --messages N [--workers W]
// actorbench pg_join --members M [--workers W]
//
// One process sends N messages to a process group of M members with
// pg::send (a snapshot of the members, a send to each); every member counts
// until it has N and reports. delivered_per_s = M*N / wall time from the
// first send to the last report. The BEAM peer does the same with OTP's pg.
//
// pg_join: M processes, spawned and waiting, are told to join; each joins one
// group itself, one call each, as a WebSocket session joins its room
// (tools/c1000k): joins_per_s = M / wall time from the first word to join to
// the last member's word that it joined. A cost per join that grows with the
// group shows as a rate that falls with M.
#include "workloads.hpp"

#include <herd/actors.hpp>
#include <herd/tables/pg.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace actorbench {
namespace {

struct tick {
  uint64_t n;
};
struct counted {
  uint64_t sum;
};
struct join_now {};
struct joined {};
struct leave_now {};

int pg_usage(const char* why) {
  std::fprintf(stderr,
               "actorbench pg_fanout|pg_join: %s\nusage: actorbench pg_fanout [--members M] [--messages N] "
               "[--workers W]\n       actorbench pg_join [--members M] [--workers W]\n",
               why);
  return 2;
}

// --members, --messages (pg_fanout only) and --workers; 0 when all are good.
int pg_options(int argc, char** argv, bool messages_allowed, uint64_t& members, uint64_t& messages,
               unsigned& workers) {
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return pg_usage(("no value after " + a).c_str());
    char* end = nullptr;
    unsigned long long v = std::strtoull(argv[++i], &end, 10);
    if (!end || *end || v == 0) return pg_usage(("bad value for " + a).c_str());
    if (a == "--members") members = v;
    else if (a == "--messages" && messages_allowed) messages = v;
    else if (a == "--workers" && v <= 256) workers = unsigned(v);
    else return pg_usage(("unknown option " + a).c_str());
  }
  return 0;
}

void member(herd::pid report, uint64_t n) {
  uint64_t sum = 0;
  for (uint64_t i = 0; i < n; ++i) herd::receive([&](tick t) { sum += t.n; });
  herd::send(report, counted{sum});
}

// Runs body as the root process of a node with room for `members` more.
template <class F>
int on_node(uint64_t members, unsigned workers, F&& body) {
  herd::node n({.workers = workers, .max_actors = size_t(members) + 1024});
  herd::exit_reason r = n.run(std::forward<F>(body));
  std::fflush(stdout);
  return r.is_normal() ? 0 : 1;
}

}  // namespace

int run_pg_fanout(int argc, char** argv) {
  uint64_t members = 10000, messages = 100;
  unsigned workers = 2;
  if (int rc = pg_options(argc, argv, true, members, messages, workers)) return rc;
  return on_node(members, workers, [&] {
    herd::pid me = herd::self();
    std::vector<herd::pid> ms;
    ms.reserve(members);
    for (uint64_t i = 0; i < members; ++i) ms.push_back(herd::spawn(member, me, messages));
    herd::pg::join("bench", ms);
    auto t0 = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < messages; ++i) herd::pg::send("bench", tick{i});
    uint64_t check = 0;
    for (uint64_t i = 0; i < members; ++i) herd::receive([&](counted c) { check += c.sum; });
    double ms_wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    double delivered = double(members) * double(messages);
    std::printf("RESULT impl=herd workload=pg_fanout members=%llu messages=%llu wall_ms=%.1f delivered_per_s=%.0f "
                "workers=%u checksum=%llu\n",
                (unsigned long long)members, (unsigned long long)messages, ms_wall, delivered / ms_wall * 1000.0,
                workers, (unsigned long long)check);
  });
}

int run_pg_join(int argc, char** argv) {
  uint64_t members = 100000, unused = 0;
  unsigned workers = 2;
  if (int rc = pg_options(argc, argv, false, members, unused, workers)) return rc;
  return on_node(members, workers, [&] {
    herd::pid me = herd::self();
    std::vector<herd::pid> ms;
    ms.reserve(members);
    // Spawned and parked first, so that the timed part is the joins (and a
    // message each way), not the spawns and their stacks' first pages.
    for (uint64_t i = 0; i < members; ++i)
      ms.push_back(herd::spawn([me] {
        herd::receive([](join_now) {});
        herd::pg::join("bench_join", "room", herd::self());
        herd::send(me, joined{});
        herd::receive([](leave_now) {});
      }));
    auto t0 = std::chrono::steady_clock::now();
    for (herd::pid p : ms) herd::send(p, join_now{});
    for (uint64_t i = 0; i < members; ++i) herd::receive([](joined) {});
    double ms_wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::size_t held = herd::pg::get_members("bench_join", "room").size();
    if (held != members) {
      std::fprintf(stderr, "actorbench pg_join: the group holds %zu of %llu members\n", held,
                   (unsigned long long)members);
      std::exit(1);
    }
    std::printf("RESULT impl=herd workload=pg_join members=%llu wall_ms=%.1f joins_per_s=%.0f workers=%u\n",
                (unsigned long long)members, ms_wall, double(members) / ms_wall * 1000.0, workers);
    for (herd::pid p : ms) herd::send(p, leave_now{});
  });
}

}  // namespace actorbench
