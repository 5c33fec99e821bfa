// hibernate: the cheap form (return herd::hibernated(fn)) and the deep form
// (herd::hibernate(fn), which unwinds), waking, chaining, giving the stack back.
#include <herd/actors.hpp>

#include <catch2/catch.hpp>

#include "support/node_fixture.hpp"
#include "support/scale.hpp"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using herd::test::dtor_probe;
using herd::test::run_node;

namespace hibernate_test_msgs {
struct stop {};
struct go {};
struct woke { std::string s; int v; };
struct total { int sum; int steps; };
struct done {};
}  // namespace hibernate_test_msgs

using namespace hibernate_test_msgs;

TEST_CASE("return hibernated(fn): fn runs when the next message arrives, with its captures", "[hibernate]") {
  unsigned workers = HERD_WORKERS();
  std::atomic<bool> started{false};
  bool started_early = true;
  std::string s;
  int v = 0;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    herd::pid child = herd::spawn([me, &started]() -> herd::hibernation {
      std::string text = "captured";
      return herd::hibernated([me, text, &started, big = std::vector<int>(100, 1)] {
        started = true;
        herd::receive([&](int x) { herd::send(me, woke{text + std::to_string(big.size()), x}); });
      });
    });
    herd::test::eventually_hibernated(child, 60s);
    started_early = started.load();
    herd::send(child, 9);
    herd::receive([&](woke w) {
      s = w.s;
      v = w.v;
    });
  });
  CHECK(r.is_normal());
  CHECK_FALSE(started_early);
  CHECK(started);
  CHECK(s == "captured100");
  CHECK(v == 9);
}

TEST_CASE("a message already waiting wakes a hibernating process at once", "[hibernate]") {
  unsigned workers = HERD_WORKERS();
  bool got = false;
  // Not woken, it would never answer: nothing else comes.
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    herd::spawn([me]() -> herd::hibernation {
      herd::send(herd::self(), 3);
      return herd::hibernated([me] { herd::receive([me](int) { herd::send(me, done{}); }); });
    });
    got = herd::receive([](done) { return true; }, herd::after(60s, [] { return false; }));
  });
  CHECK(r.is_normal());
  CHECK(got);
}

TEST_CASE("the continuation may take the message that woke it, or leave it for a later receive", "[hibernate]") {
  std::vector<int> order;
  auto r = run_node(herd::test::opts(2), [&] {
    herd::pid me = herd::self();
    herd::pid child = herd::spawn([me]() -> herd::hibernation {
      return herd::hibernated([me] {
        // Woken by an int, but it wants go first: the int stays.
        herd::receive([](go) {});
        int v = herd::receive([](int x) { return x; });
        herd::send(me, v);
      });
    });
    herd::send(child, 7);
    herd::test::eventually_waiting(child, 60s);  // woken, it waits for go with the 7 kept
    herd::send(child, go{});
    order.push_back(herd::receive([](int x) { return x; }));
  });
  CHECK(r.is_normal());
  CHECK(order == std::vector<int>{7});
}

namespace {
struct deep_state {
  std::atomic<int> dtors{0};
  std::atomic<bool> after_hibernate{false};
};

void descend(deep_state& st, herd::pid parent, int depth) {
  if (depth < 0) return;
  dtor_probe p(st.dtors);
  if (depth == 0) {
    herd::hibernate([&st, parent] {
      int seen = st.dtors.load();
      herd::receive([&](int v) { herd::send(parent, total{v, seen}); });
    });
  }
  descend(st, parent, depth - 1);
  st.after_hibernate = true;
}
}  // namespace

TEST_CASE("hibernate(fn) from deep in a call chain unwinds the frames it leaves, then runs fn", "[hibernate]") {
  unsigned workers = HERD_WORKERS();
  deep_state st;
  int dtors_seen_by_fn = -1, value = 0;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    herd::pid child = herd::spawn([&st, me] { descend(st, me, 9); });
    herd::test::eventually_hibernated(child, 60s);
    herd::send(child, 5);
    herd::receive([&](total t) {
      value = t.sum;
      dtors_seen_by_fn = t.steps;
    });
  });
  CHECK(r.is_normal());
  CHECK(dtors_seen_by_fn == 10);  // all ten frames were unwound before fn ran
  CHECK(value == 5);
  CHECK_FALSE(st.after_hibernate);
}

TEST_CASE("the root can hibernate (deep form) - its continuation's end is the root's end", "[hibernate]") {
  unsigned workers = HERD_WORKERS();
  int got = 0;
  std::atomic<int> dtors{0};
  auto r = run_node(herd::test::opts(workers), [&] {
    dtor_probe p(dtors);
    herd::pid me = herd::self();
    herd::spawn([me] {
      herd::test::eventually_hibernated(me, 60s);
      herd::send(me, 17);
    });
    herd::hibernate([&] { herd::receive([&](int v) { got = v; }); });
  });
  CHECK(r.is_normal());
  CHECK(got == 17);
  CHECK(dtors == 1);
}

namespace {
herd::hibernation step(herd::pid parent, int sum, int steps, int left) {
  return herd::hibernated([=]() -> herd::hibernation {
    int v = herd::receive([](int x) { return x; });
    if (left == 1) {
      herd::send(parent, total{sum + v, steps + 1});
      herd::exit(herd::exit_reason::normal());
    }
    return step(parent, sum + v, steps + 1, left - 1);
  });
}
}  // namespace

TEST_CASE("chained hibernation: a continuation may hibernate again", "[hibernate]") {
  unsigned workers = HERD_WORKERS();
  const int n = 200;
  total t{0, 0};
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    herd::pid child = herd::spawn([me] { return step(me, 0, 0, n); });
    for (int i = 1; i <= n; ++i) {
      herd::send(child, i);
      if (i % 16 == 0) herd::test::eventually_hibernated(child, 60s);  // sometimes hibernated in between
    }
    herd::receive([&](total x) { t = x; });
  });
  CHECK(r.is_normal());
  CHECK(t.steps == n);
  CHECK(t.sum == n * (n + 1) / 2);
}

TEST_CASE("a hibernated process gives its stack back to the pool", "[hibernate][memory]") {
  const std::size_t n_procs = herd::test::scaled(1000, 500);
  uint64_t base = 0, blocked = 0, hibernated = 0;
  int woke = 0;
  auto r = herd::test::run_node_with(herd::test::opts(2), [&](herd::node& n) {
    herd::pid me = herd::self();
    base = n.runtime().metrics().stacks_in_use;
    std::vector<herd::pid> pids;
    for (std::size_t i = 0; i < n_procs; ++i) pids.push_back(herd::spawn([] { herd::receive([](stop) {}); }));
    blocked = n.runtime().metrics().stacks_in_use;
    for (herd::pid p : pids) herd::send(p, stop{});
    herd::test::wait_live(1);
    pids.clear();
    for (std::size_t i = 0; i < n_procs; ++i)
      pids.push_back(herd::spawn([me]() -> herd::hibernation {
        return herd::hibernated([me] { herd::receive([me](stop) { herd::send(me, done{}); }); });
      }));
    herd::test::eventually([&] { return n.runtime().metrics().stacks_in_use < base + n_procs / 10; }, 60s);
    hibernated = n.runtime().metrics().stacks_in_use;
    for (herd::pid p : pids) herd::send(p, stop{});
    for (std::size_t i = 0; i < n_procs; ++i) herd::receive([&](done) { ++woke; });
  });
  CHECK(r.is_normal());
  INFO("stacks in use: base " << base << ", " << n_procs << " blocked " << blocked << ", " << n_procs
                              << " hibernated " << hibernated);
  CHECK(blocked >= base + n_procs);
  CHECK(hibernated < base + n_procs / 10);
  CHECK(woke == int(n_procs));
}

TEST_CASE("an exit signal ends a hibernated process without running fn - fn's captures are destroyed",
          "[hibernate][exit]") {
  unsigned workers = HERD_WORKERS();
  std::atomic<int> dtors{0};
  std::atomic<bool> fn_ran{false};
  bool destroyed = false;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid child = herd::spawn([&dtors, &fn_ran]() -> herd::hibernation {
      return herd::hibernated([p = std::make_shared<dtor_probe>(dtors), &fn_ran] { fn_ran = true; });
    });
    herd::test::eventually_hibernated(child, 60s);
    herd::exit(child, herd::exit_reason::shutdown());
    destroyed = herd::test::eventually([&] { return dtors.load() == 1; }, 60s);
  });
  CHECK(r.is_normal());
  CHECK(destroyed);
  CHECK_FALSE(fn_ran);
}

TEST_CASE("an exception escaping a continuation is the process's exit reason", "[hibernate][exit]") {
  auto r = run_node(herd::test::opts(2), []() {
    herd::pid me = herd::self();
    herd::spawn([me] {
      herd::test::eventually_hibernated(me, 60s);
      herd::send(me, 1);
    });
    herd::hibernate([] {
      herd::receive([](int) {});
      throw std::runtime_error("after waking");
    });
  });
  CHECK(r.kind() == herd::exit_kind::error);
  CHECK(r.type() == "std::runtime_error");
  CHECK(r.what() == "after waking");
}
