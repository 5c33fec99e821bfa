// Spawning and exiting a million processes: in waves from the root (a wave of blocked
// processes is alive at once, then all are released), and as a relay where each process
// spawns the next. Small scale: 20,000 (waves of 500).
#include "stress/stress_support.hpp"

#include <algorithm>
#include <atomic>
#include <vector>

namespace spawn_msgs {
struct go {};
struct done {
  uint64_t id;
};
struct relay_done {
  uint64_t hops;
};
}  // namespace spawn_msgs

using herd::stress::check_clean;
using herd::stress::options;
using herd::stress::run_node;
using herd::test::scaled;

namespace {

void wave_member(herd::pid root, uint64_t id) {
  herd::receive([](spawn_msgs::go) {});
  herd::send(root, spawn_msgs::done{id});
}

// Each member waits for its parent's go, spawns its successor, hands it the go and exits, so
// that at most three processes are alive; the last one reports to the root.
void relay_member(herd::pid root, uint64_t left, uint64_t hops) {
  herd::receive([](spawn_msgs::go) {});
  if (left == 0) {
    herd::send(root, spawn_msgs::relay_done{hops});
    return;
  }
  const herd::pid next = herd::spawn(relay_member, root, left - 1, hops + 1);
  herd::send(next, spawn_msgs::go{});
}

}  // namespace

TEST_CASE("spawn and exit 1,000,000 processes in waves from the root", "[stress][spawn]") {
  const unsigned workers = GENERATE(from_range(std::begin(herd::test::worker_counts), std::end(herd::test::worker_counts)));
  const uint64_t total = scaled(1'000'000, 20'000);
  // Small scale: 500 a wave. Under TSan every stack slot a node ever used holds a TSan fiber
  // until the process ends (see teardown_test.cpp), and the three nodes of this test share one
  // process and TSan's limit of ~8,000.
  const uint64_t wave = scaled(10'000, 500);
  CAPTURE(workers, total, wave);
  uint64_t received = 0, bad_ids = 0, max_live = 0;
  const auto r = run_node(options(workers), [&] {
    const herd::pid me = herd::self();
    std::vector<herd::pid> pids;
    std::vector<uint8_t> seen(wave);
    pids.reserve(wave);
    for (uint64_t base = 0; base < total; base += wave) {
      pids.clear();
      std::fill(seen.begin(), seen.end(), 0);
      for (uint64_t i = 0; i < wave; ++i) pids.push_back(herd::spawn(wave_member, me, base + i));
      max_live = std::max<uint64_t>(max_live, herd::current_node_stats().live_processes);
      for (herd::pid p : pids) herd::send(p, spawn_msgs::go{});
      for (uint64_t i = 0; i < wave; ++i)
        herd::receive([&](spawn_msgs::done d) {
          ++received;
          if (d.id < base || d.id >= base + wave || seen[d.id - base]++) ++bad_ids;
        });
    }
  });
  CHECK(received == total);
  CHECK(bad_ids == 0);
  CHECK(max_live >= wave);  // a wave really was alive at once
  check_clean(r, total + 1);
}

TEST_CASE("spawn and exit 1,000,000 processes, each spawning the next", "[stress][spawn]") {
  const unsigned workers = GENERATE(from_range(std::begin(herd::test::worker_counts), std::end(herd::test::worker_counts)));
  const uint64_t total = scaled(1'000'000, 20'000);
  CAPTURE(workers, total);
  uint64_t hops = 0;
  std::atomic<uint64_t> max_live{0};
  const auto r = run_node(options(workers), [&] {
    const herd::pid me = herd::self();
    const herd::pid first = herd::spawn(relay_member, me, total - 1, uint64_t{1});
    herd::send(first, spawn_msgs::go{});
    // Sample the live count while the relay runs (it should stay tiny).
    bool finished = false;
    while (!finished) {
      herd::receive([&](spawn_msgs::relay_done d) { hops = d.hops, finished = true; },
                    herd::after(std::chrono::milliseconds(5), [&] {
                      uint64_t live = herd::current_node_stats().live_processes;
                      if (live > max_live.load()) max_live.store(live);
                    }));
    }
  });
  CHECK(hops == total);
  CHECK(max_live.load() <= 8);  // root + a few relay members, never a pile-up
  check_clean(r, total + 1);
}

TEST_CASE("stack pools stay bounded: waves of spawns at 2 workers carve about the live peak", "[stress][spawn]") {
  const unsigned workers = 2;
  const uint64_t wave = scaled(10'000, 500);
  const uint64_t waves = scaled(60, 10);
  CAPTURE(wave, waves);
  std::size_t rss_first = 0, rss_last = 0;
  uint64_t received = 0;
  const auto r = run_node(options(workers), [&] {
    const herd::pid me = herd::self();
    std::vector<herd::pid> pids;
    for (uint64_t w = 0; w < waves; ++w) {
      pids.clear();
      for (uint64_t i = 0; i < wave; ++i) pids.push_back(herd::spawn(wave_member, me, i));
      for (herd::pid p : pids) herd::send(p, spawn_msgs::go{});
      for (uint64_t i = 0; i < wave; ++i) herd::receive([&](spawn_msgs::done) { ++received; });
      (w == 0 ? rss_first : rss_last) = herd::stress::rss_bytes();
    }
  });
  CHECK(received == wave * waves);
  check_clean(r, wave * waves + 1);
  INFO("stacks carved: " << r.stacks_carved << "; RSS after the first wave " << rss_first / 1024
                         << " KiB, after the last " << rss_last / 1024 << " KiB");
  CHECK(r.stacks_carved <= 2 * wave + 1024 * workers + 64);
}
