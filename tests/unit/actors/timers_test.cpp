// Timers: sleep, send_after, cancel_timer, read_timer, and the deterministic
// mode's virtual clock.
#include <herd/actors.hpp>
#include <herd/runtime/clock.hpp>

#include <catch2/catch.hpp>

#include "support/node_fixture.hpp"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using herd::test::run_node;

namespace timers_test_msgs {
struct tick { int n; };
struct woke { int id; uint64_t at; };
struct stop {};
}  // namespace timers_test_msgs

using namespace timers_test_msgs;

TEST_CASE("sleep does not end before the time asked - messages that arrive meanwhile stay queued", "[timers]") {
  unsigned workers = HERD_WORKERS();
  double ms = 0;
  bool zero_returned = false;
  std::size_t queued = 0;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    herd::spawn([me] {
      herd::test::eventually_parked(me);  // the root is in its sleep
      herd::send(me, tick{1});
    });
    auto t0 = herd::test::clk::now();
    herd::sleep(300ms);  // the sleep under test (its lower bound)
    ms = herd::test::ms_since(t0);
    queued = herd::mailbox_size();
    herd::receive([](tick) {});
    // A zero or negative duration returns: it must not wrap to an endless wait.
    herd::sleep(0ms);
    herd::sleep(-5ms);
    zero_returned = true;
  });
  CHECK(r.is_normal());
  CHECK(ms >= 299);
  CHECK(queued == 1);
  CHECK(zero_returned);
}

TEST_CASE("send_after delivers the message after the delay", "[timers]") {
  unsigned workers = HERD_WORKERS();
  bool early = true, got = false;
  double ms = 0;
  int v = 0;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    auto t0 = herd::test::clk::now();
    herd::timer_ref t = herd::send_after(40ms, me, tick{7});
    early = herd::receive([](tick) { return true; }, herd::after(0ms, [] { return false; }));
    got = herd::receive([&](tick x) { v = x.n; return true; }, herd::after(5s, [] { return false; }));
    ms = herd::test::ms_since(t0);
  });
  CHECK(r.is_normal());
  CHECK_FALSE(early);
  CHECK(got);
  CHECK(v == 7);
  CHECK(ms >= 39);
}

TEST_CASE("send_after timers fire in deadline order", "[timers]") {
  unsigned workers = HERD_WORKERS();
  std::vector<int> order;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    for (int d : {90, 10, 50, 30, 70}) herd::send_after(std::chrono::milliseconds(d), me, tick{d});
    for (int i = 0; i < 5; ++i) order.push_back(herd::receive([](tick t) { return t.n; }));
  });
  CHECK(r.is_normal());
  CHECK(order == std::vector<int>{10, 30, 50, 70, 90});
}

TEST_CASE("cancel_timer before it fires prevents delivery and returns true - after it fired, false",
          "[timers]") {
  unsigned workers = HERD_WORKERS();
  bool cancelled = false, cancelled_twice = true, delivered = true, late_cancel = true;
  int64_t left_after_cancel = 0, left_after_fire = 0;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    herd::timer_ref t = herd::send_after(30ms, me, std::string(200, 'c'));
    cancelled = herd::cancel_timer(t);
    cancelled_twice = herd::cancel_timer(t);
    left_after_cancel = herd::read_timer(t);
    delivered = herd::receive([](std::string) { return true; }, herd::after(80ms, [] { return false; }));

    herd::timer_ref t2 = herd::send_after(5ms, me, tick{2});
    herd::receive([](tick) {});
    late_cancel = herd::cancel_timer(t2);
    left_after_fire = herd::read_timer(t2);
  });
  CHECK(r.is_normal());
  CHECK(cancelled);
  CHECK_FALSE(cancelled_twice);
  CHECK(left_after_cancel == -1);
  CHECK_FALSE(delivered);
  CHECK_FALSE(late_cancel);
  CHECK(left_after_fire == -1);
}

TEST_CASE("read_timer tells the milliseconds left", "[timers]") {
  int64_t left0 = -2, left1 = -2;
  // An hour: however long a loaded machine takes, the timer is still pending.
  auto r = run_node(herd::test::opts(2), [&] {
    herd::timer_ref t = herd::send_after(1h, herd::self(), tick{0});
    left0 = herd::read_timer(t);
    herd::sleep(100ms);  // an interval to measure, not synchronisation
    left1 = herd::read_timer(t);
    herd::cancel_timer(t);
  });
  CHECK(r.is_normal());
  CHECK(left0 > 3'600'000 - 60'000);
  CHECK(left0 <= 3'600'000);
  CHECK(left1 > 0);
  CHECK(left1 <= left0 - 99);
}

TEST_CASE("cancel_timer works from another process and from a foreign thread", "[timers]") {
  // Timers of a minute: the cancels must win however slow the machine (a
  // 50 ms timer lost the race under TSan on a loaded CI machine).
  unsigned workers = HERD_WORKERS();
  bool by_process = false, by_thread = false, delivered = true;
  int64_t left1 = 0, left2 = 0;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    herd::timer_ref t1 = herd::send_after(60s, me, tick{1});
    herd::timer_ref t2 = herd::send_after(60s, me, tick{2});
    herd::spawn([t1, &by_process, me] {
      by_process = herd::cancel_timer(t1);
      herd::send(me, stop{});
    });
    herd::receive([](stop) {});
    herd::blocking([&] {
      std::thread th([&] { by_thread = herd::cancel_timer(t2); });
      th.join();
    });
    left1 = herd::read_timer(t1);
    left2 = herd::read_timer(t2);
    delivered = herd::receive([](tick) { return true; }, herd::after(0ms, [] { return false; }));
  });
  CHECK(r.is_normal());
  CHECK(by_process);
  CHECK(by_thread);
  CHECK(left1 == -1);  // gone: nothing will fire
  CHECK(left2 == -1);
  CHECK_FALSE(delivered);
}

TEST_CASE("send_after from a foreign thread delivers", "[timers]") {
  unsigned workers = HERD_WORKERS();
  int got = 0;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    std::thread th([me] { herd::send_after(10ms, me, tick{5}); });
    got = herd::receive([](tick t) { return t.n; }, herd::after(5s, [] { return -1; }));
    herd::blocking([&] { th.join(); });
  });
  CHECK(r.is_normal());
  CHECK(got == 5);
}

TEST_CASE("a send_after to a process that has died is dropped and freed", "[timers]") {
  bool fired = false;
  auto r = herd::test::run_node_with(herd::test::opts(2), [&](herd::node& n) {
    herd::pid child = herd::spawn([] { herd::receive([](stop) {}); });
    herd::send_after(10ms, child, std::string(300, 'd'));
    herd::send(child, stop{});
    // The timer has fired (no timer left armed) before the node ends, which
    // then checks that its message was freed.
    fired = herd::test::eventually([&] { return herd::test::armed_timers(n.runtime()) == 0; }, 60s);
  });
  CHECK(r.is_normal());
  CHECK(fired);
}

// Hours: a node that waited for its timers would time the test out.
TEST_CASE("timers still pending when the node stops never fire and their messages are freed", "[timers][node]") {
  auto r = run_node(herd::test::opts(2), [&] {
    herd::pid me = herd::self();
    herd::send_after(1h, me, std::string(300, 'p'));
    herd::spawn([me] { herd::send_after(1h, me, tick{1}); });
  });
  CHECK(r.is_normal());
}

// Hours of virtual time: in wall time they would time the test out.
TEST_CASE("deterministic mode: timeouts and sleeps take no wall time (virtual clock)", "[timers][deterministic]") {
  uint64_t virt = 0;
  bool timed_out = false;
  unsigned workers = 0;
  auto r = herd::test::run_node_with(herd::test::deterministic_opts(), [&](herd::node& n) {
    workers = n.runtime().workers();
    uint64_t v0 = herd::rt::now_ms();
    herd::receive([](tick) {}, herd::after(1h, [&] { timed_out = true; }));
    herd::sleep(2h);  // the virtual sleep under test
    virt = herd::rt::now_ms() - v0;
  });
  CHECK(r.is_normal());
  CHECK(workers == 1);
  CHECK(timed_out);
  CHECK(virt == 3 * 3'600'000);
}

TEST_CASE("deterministic mode: timers fire in exact deadline order at exact virtual times", "[timers][deterministic]") {
  std::vector<std::pair<int, uint64_t>> got;
  uint64_t start = 0;
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    herd::pid me = herd::self();
    start = herd::rt::now_ms();
    // Sleepers and send_after timers, interleaved.
    for (int d : {300, 100, 500, 200}) {
      herd::spawn([me, d] {
        herd::sleep(std::chrono::milliseconds(d));  // virtual time: the timer under test
        herd::send(me, woke{d, herd::rt::now_ms()});
      });
    }
    for (int d : {450, 150, 50}) herd::send_after(std::chrono::milliseconds(d), me, woke{d, 0});
    for (int i = 0; i < 7; ++i)
      herd::receive([&](woke w) { got.emplace_back(w.id, w.at ? w.at : herd::rt::now_ms()); });
  });
  CHECK(r.is_normal());
  REQUIRE(got.size() == 7);
  std::vector<int> ids;
  for (auto& [id, at] : got) {
    ids.push_back(id);
    CHECK(at - start == uint64_t(id));  // exactly on time in virtual time
  }
  CHECK(ids == std::vector<int>{50, 100, 150, 200, 300, 450, 500});
}

TEST_CASE("deterministic mode: a receive timeout after one hour takes no wall time, and runs are reproducible",
          "[timers][deterministic]") {
  auto run_once = [] {
    std::vector<int> trace;
    auto r = run_node(herd::test::deterministic_opts(), [&] {
      herd::pid me = herd::self();
      for (int i = 0; i < 5; ++i)
        herd::spawn([me, i] {
          for (int k = 0; k < 3; ++k) {
            herd::sleep(std::chrono::milliseconds(700 * (i + 1) + 13 * k));  // virtual time, under test
            herd::send(me, tick{i * 10 + k});
          }
        });
      for (int i = 0; i < 15; ++i) trace.push_back(herd::receive([](tick t) { return t.n; }));
      herd::receive([](stop) {}, herd::after(1h));
    });
    CHECK(r.is_normal());
    return trace;
  };
  // The hour's timeout in wall time would time the test out.
  auto a = run_once();
  auto b = run_once();
  CHECK(a == b);
  CHECK(a.size() == 15);
}

TEST_CASE("deterministic mode: the virtual clock does not jump while blocking() work is in flight",
          "[timers][deterministic][blocking]") {
  int got = 0;
  uint64_t virt = 99;
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    herd::pid me = herd::self();
    uint64_t v0 = herd::rt::now_ms();
    herd::spawn([me] {
      herd::blocking([] { std::this_thread::sleep_for(50ms); });  // blocking work in flight: under test
      herd::send(me, tick{1});
    });
    got = herd::receive([](tick t) { return t.n; }, herd::after(10s, [] { return -1; }));
    virt = herd::rt::now_ms() - v0;
  });
  CHECK(r.is_normal());
  CHECK(got == 1);
  CHECK(virt == 0);
}

TEST_CASE("send_after with a zero or negative delay delivers at once - a huge delay can be read and cancelled",
          "[timers]") {
  unsigned workers = HERD_WORKERS();
  int zero = 0, negative = 0;
  int64_t left = 0;
  bool cancelled = false;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    herd::send_after(0ms, me, tick{1});
    zero = herd::receive([](tick t) { return t.n; }, herd::after(1s, [] { return -1; }));
    herd::send_after(-10ms, me, tick{2});
    negative = herd::receive([](tick t) { return t.n; }, herd::after(1s, [] { return -1; }));
    herd::timer_ref t = herd::send_after(std::chrono::hours(24 * 365 * 1000), me, std::string(100, 'h'));
    left = herd::read_timer(t);
    cancelled = herd::cancel_timer(t);
  });
  CHECK(r.is_normal());
  CHECK(zero == 1);
  CHECK(negative == 2);
  CHECK(left > int64_t(24) * 365 * 999 * 3600 * 1000);
  CHECK(cancelled);
}
