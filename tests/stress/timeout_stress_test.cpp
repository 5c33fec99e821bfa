// 10^7 receives, each with a 5 s timeout and each satisfied by a message (small scale: 10^5).
// A satisfied timeout must be unlinked at once (the timer node is embedded in the process):
// lazily cancelled timers would pile up for 5 s — millions of entries — so RSS must stay
// flat after a warm-up, and the run must not slow to a crawl.
#include "stress/stress_support.hpp"

#include <herd/runtime/clock.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>

namespace timeout_msgs {
struct ball {
  uint64_t n;
};
}  // namespace timeout_msgs

using herd::stress::check_clean;
using herd::stress::clk;
using herd::stress::ms_since;
using herd::stress::options;
using herd::stress::rss_bytes;
using herd::stress::run_node;
using namespace std::chrono_literals;

TEST_CASE("10^7 receives with a 5 s timeout, each satisfied by a message, keep RSS flat", "[stress][timeout]") {
  const unsigned workers = 2;
  const uint64_t receives = herd::test::scaled(10'000'000, 100'000);
  const uint64_t warmup = receives / 20;  // then RSS is measured, at the start and the end
  CAPTURE(workers, receives);
  uint64_t timeouts = 0, echo_timeouts = 0, wrong = 0, done = 0;
  std::size_t rss_start = 0, rss_end = 0;
  double run_ms = 0;
  const auto r = run_node(options(workers), [&] {
    // A ping-pong pair: every receive on either side carries after(5s) and is satisfied by the
    // other side's next message. Each round trip is two receives.
    const herd::pid me = herd::self();
    const herd::pid echo = herd::spawn([me, &echo_timeouts] {
      for (;;) {
        bool got = false;
        uint64_t n = 0;
        herd::receive([&](timeout_msgs::ball b) { n = b.n, got = true; },
                      herd::after(5s, [&] { ++echo_timeouts; }));
        if (!got) continue;
        herd::send(me, timeout_msgs::ball{n});
        if (n == 0) return;
      }
    });
    auto round_trips = [&](uint64_t from, uint64_t count) {
      for (uint64_t i = from; i < from + count; ++i) {
        const uint64_t n = receives / 2 - i - 1;  // counts down to 0: the echo's stop
        herd::send(echo, timeout_msgs::ball{n});
        bool got = false;
        while (!got)
          herd::receive(
              [&](timeout_msgs::ball b) {
                got = true;
                ++done;
                if (b.n != n) ++wrong;
              },
              herd::after(5s, [&] { ++timeouts; }));
      }
    };
    round_trips(0, warmup / 2);
    rss_start = rss_bytes();
    const auto t0 = clk::now();
    round_trips(warmup / 2, receives / 2 - warmup / 2);
    run_ms = ms_since(t0);
    rss_end = rss_bytes();
  });
  INFO("rss at start " << rss_start / 1024 << " KiB, at end " << rss_end / 1024 << " KiB; " << receives
                       << " receives in " << r.wall_ms << " ms (" << run_ms << " ms measured)");
  CHECK(done * 2 == receives);
  CHECK(wrong == 0);
  CHECK(timeouts == 0);
  CHECK(echo_timeouts == 0);
  CHECK(rss_start > 0);
  CHECK(rss_end < rss_start + 8 * 1024 * 1024);
  // A lost wake-up shows as a timeout above (5 s per receive), not in the wall time.
  check_clean(r, 2);  // the root and the echo
}

// Deadlines are rounded up to the next whole millisecond (rt::deadline_after),
// so a timeout never ends before its duration, even when it starts 0.9 ms into
// a millisecond while the worker is awake.
TEST_CASE("sleep and receive timeouts never end before their duration has elapsed", "[stress][timeout]") {
  const int rounds = 50;
  int early_sleep = 0, early_receive = 0;
  double shortest_sleep = 1e9, shortest_receive = 1e9;
  std::atomic<bool> stop{false};
  const auto r = run_node(options(1), [&] {
    herd::spawn([&] {  // keeps the worker awake: it runs its timers at every millisecond
      while (!stop.load(std::memory_order_relaxed)) herd::yield();
    });
    // Starts 0.9 ms into a millisecond of the runtime's clock.
    auto late_in_a_millisecond = [] {
      const uint64_t ms = herd::rt::now_ms();
      while (herd::rt::now_ms() == ms) {
      }
      const auto until = clk::now() + std::chrono::microseconds(900);
      while (clk::now() < until) {
      }
    };
    for (int i = 0; i < rounds; ++i) {
      late_in_a_millisecond();
      auto t0 = clk::now();
      herd::sleep(1ms);  // the sleep under test (its lower bound)
      double el = ms_since(t0);
      early_sleep += el < 1.0;
      shortest_sleep = std::min(shortest_sleep, el);
      late_in_a_millisecond();
      t0 = clk::now();
      herd::receive([](timeout_msgs::ball) {}, herd::after(1ms));
      el = ms_since(t0);
      early_receive += el < 1.0;
      shortest_receive = std::min(shortest_receive, el);
    }
    stop.store(true);
  });
  INFO("sleep(1ms): " << early_sleep << " of " << rounds << " early, shortest " << shortest_sleep
                      << " ms; receive after(1ms): " << early_receive << " early, shortest " << shortest_receive
                      << " ms");
  CHECK(early_sleep == 0);
  CHECK(early_receive == 0);
  check_clean(r, 2);
}
