// blocking(fn): fn runs on the blocking pool while the worker runs others; its
// value or exception comes back; an exit signal takes effect at its return.
#include <herd/actors.hpp>
#include <herd/runtime/sched.hpp>

#include <catch2/catch.hpp>

#include "support/node_fixture.hpp"

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

using namespace std::chrono_literals;
using herd::test::dtor_probe;
using herd::test::run_node;

namespace blocking_test_msgs {
struct ping { herd::pid from; };
struct pong {};
struct done { int id; };
struct stop {};
}  // namespace blocking_test_msgs

using namespace blocking_test_msgs;

TEST_CASE("blocking runs fn on another thread and returns its value", "[blocking]") {
  unsigned workers = HERD_WORKERS();
  int v = 0;
  bool other_thread = false, on_worker_inside = true;
  std::string s;
  auto r = run_node(herd::test::opts(workers), [&] {
    auto worker_thread = std::this_thread::get_id();
    auto [value, tid, on_worker] = herd::blocking(
        [] { return std::tuple{42, std::this_thread::get_id(), herd::rt::on_worker()}; });
    v = value;
    other_thread = tid != worker_thread && tid != std::this_thread::get_id();
    on_worker_inside = on_worker;
    s = herd::blocking([] { return std::string(1000, 'b'); });
    std::unique_ptr<int> p = herd::blocking([] { return std::make_unique<int>(3); });
    v += *p;
    int side = 0;
    herd::blocking([&] { side = 4; });  // void
    v += side;
  });
  CHECK(r.is_normal());
  CHECK(v == 49);
  CHECK(other_thread);
  CHECK_FALSE(on_worker_inside);
  CHECK(s.size() == 1000);
}

TEST_CASE("an exception thrown by fn is rethrown in the process", "[blocking]") {
  unsigned workers = HERD_WORKERS();
  std::string what;
  auto r = run_node(herd::test::opts(workers), [&] {
    try {
      herd::blocking([]() -> int { throw std::invalid_argument("dirty"); });
    } catch (const std::invalid_argument& e) {
      what = e.what();
    }
  });
  CHECK(r.is_normal());
  CHECK(what == "dirty");

  auto r2 = run_node(herd::test::opts(workers), [] { herd::blocking([] { throw std::runtime_error("uncaught"); }); });
  CHECK(r2.kind() == herd::exit_kind::error);
  CHECK(r2.type() == "std::runtime_error");
  CHECK(r2.what() == "uncaught");
}

TEST_CASE("while one process is in blocking(), others keep running on a single worker", "[blocking]") {
  unsigned workers = HERD_WORKERS();
  std::atomic<int> rounds{0};
  bool blocked_throughout = false;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    herd::pid echo = herd::spawn([] {
      for (bool more = true; more;)
        herd::receive([](ping p) { herd::send(p.from, pong{}); }, [&](stop) { more = false; });
    });
    herd::spawn([me, &rounds] {
      // Blocked until the others have run 100 rounds (bounded only to end a
      // broken run): they ran while it was blocked.
      bool seen = herd::blocking([&rounds] {
        auto end = herd::test::clk::now() + 60s;
        while (rounds.load() < 100 && herd::test::clk::now() < end) std::this_thread::sleep_for(1ms);
        return rounds.load() >= 100;
      });
      herd::send(me, done{seen ? 1 : 0});
    });
    // Ping-pong until the blocked one is done.
    for (bool finished = false; !finished;) {
      herd::send(echo, ping{me});
      herd::receive([&](pong) { ++rounds; }, [&](done d) {
        finished = true;
        blocked_throughout = d.id == 1;
        herd::receive([&](pong) { ++rounds; });
      });
    }
    herd::send(echo, stop{});
  });
  CHECK(r.is_normal());
  CHECK(blocked_throughout);
  CHECK(rounds >= 100);
}

TEST_CASE("an exit signal sent during blocking() takes effect when blocking() returns", "[blocking][exit]") {
  unsigned workers = HERD_WORKERS();
  std::atomic<bool> in_fn{false}, fn_done{false}, after_blocking{false}, exit_sent{false};
  std::atomic<int> dtors{0};
  bool unwound = false;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    herd::pid target = herd::spawn([&, me] {
      dtor_probe p(dtors);
      herd::send(me, stop{});
      herd::blocking([&] {
        in_fn = true;
        // Still in blocking() when the exit comes (bounded only to end a broken run).
        auto end = herd::test::clk::now() + 60s;
        while (!exit_sent.load() && herd::test::clk::now() < end) std::this_thread::sleep_for(1ms);
        fn_done = true;
      });
      after_blocking = true;
    });
    herd::receive([](stop) {});
    herd::test::eventually([&] { return in_fn.load(); }, 60s);
    herd::exit(target, herd::exit_reason::shutdown("during"));
    exit_sent = true;
    unwound = herd::test::eventually([&] { return dtors.load() == 1; }, 60s);
  });
  CHECK(r.is_normal());
  CHECK(unwound);
  CHECK(dtors == 1);
  CHECK(fn_done);              // fn ran to its end
  CHECK_FALSE(after_blocking); // the process unwound at blocking()'s return
}

TEST_CASE("the root in blocking() gets an exit signal: run() returns it when blocking() returns",
          "[blocking][exit]") {
  bool after = false;
  std::atomic<bool> exit_sent{false};
  auto r = run_node(herd::test::opts(2), [&] {
    herd::pid me = herd::self();
    herd::spawn([me, &exit_sent] {
      herd::exit(me, herd::exit_reason::shutdown("while blocked"));
      exit_sent = true;
    });
    // In blocking() until the exit has been sent (bounded only to end a broken run).
    herd::blocking([&exit_sent] {
      auto end = herd::test::clk::now() + 60s;
      while (!exit_sent.load() && herd::test::clk::now() < end) std::this_thread::sleep_for(1ms);
    });
    after = true;
  });
  CHECK(r == herd::exit_reason::shutdown("while blocked"));
  CHECK_FALSE(after);
}

TEST_CASE("many processes in blocking() at once all complete", "[blocking]") {
  unsigned workers = HERD_WORKERS();
  int sum = 0;
  herd::node_options o = herd::test::opts(workers);
  o.blocking_threads = 8;
  auto r = run_node(o, [&] {
    herd::pid me = herd::self();
    for (int i = 0; i < 32; ++i)
      herd::spawn([me, i] {
        int v = herd::blocking([i] {
          std::this_thread::sleep_for(20ms);  // the blocking work itself
          return i;
        });
        herd::send(me, done{v});
      });
    for (int i = 0; i < 32; ++i) herd::receive([&](done d) { sum += d.id; });
  });
  CHECK(r.is_normal());
  CHECK(sum == 31 * 32 / 2);
}

TEST_CASE("blocking() outside a process runs fn inline", "[blocking]") {
  auto here = std::this_thread::get_id();
  auto there = herd::blocking([] { return std::this_thread::get_id(); });
  CHECK(there == here);
}
