// Selective receive: order, handler choice, guards, parameter forms, results,
// timeouts and the receive mark.
// herd-unity: file scope (its checks name its types with their namespaces)
#include <herd/actors.hpp>

#include <catch2/catch.hpp>

#include "support/node_fixture.hpp"
#include "support/scale.hpp"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using herd::test::run_node;

namespace receive_test_msgs {
struct a { int v; };
struct b { int v; };
struct stop {};
struct ping { herd::pid from; int n; };
struct pong { int n; };
struct junk { int n; };
struct request { herd::pid from; int n; };
struct reply { int n; };
struct bye {};

// Counts live instances, copies and moves.
struct tracked {
  static inline std::atomic<int> live{0};
  static inline std::atomic<int> copies{0};
  int v;
  explicit tracked(int x) : v(x) { ++live; }
  tracked(const tracked& o) : v(o.v) { ++live; ++copies; }
  tracked(tracked&& o) noexcept : v(o.v) { ++live; o.v = -1; }
  ~tracked() { --live; }
};
}  // namespace receive_test_msgs

using namespace receive_test_msgs;

TEST_CASE("a message no handler matches stays in the mailbox, in order, for a later receive", "[receive]") {
  unsigned workers = HERD_WORKERS();
  std::vector<int> got_b, got_a;
  std::size_t size_after_first = 0;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    herd::send(me, a{1});
    herd::send(me, b{1});
    herd::send(me, a{2});
    herd::send(me, b{2});
    herd::send(me, a{3});
    herd::receive([&](b x) { got_b.push_back(x.v); });
    size_after_first = herd::mailbox_size();
    herd::receive([&](b x) { got_b.push_back(x.v); });
    for (int i = 0; i < 3; ++i) herd::receive([&](a x) { got_a.push_back(x.v); });
  });
  CHECK(r.is_normal());
  CHECK(size_after_first == 4);
  CHECK(got_b == std::vector<int>{1, 2});
  CHECK(got_a == std::vector<int>{1, 2, 3});
}

TEST_CASE("the oldest message any handler accepts is taken, whatever the handlers' order", "[receive]") {
  std::vector<int> seen;  // a{v} as v, b{v} as -v
  auto r = run_node(herd::test::opts(1), [&] {
    herd::pid me = herd::self();
    herd::send(me, b{1});
    herd::send(me, a{2});
    // The a-handler comes first, but b{1} is older: b{1} is taken.
    for (int i = 0; i < 2; ++i)
      herd::receive([&](a x) { seen.push_back(x.v); }, [&](b x) { seen.push_back(-x.v); });
  });
  CHECK(r.is_normal());
  CHECK(seen == std::vector<int>{-1, 2});
}

TEST_CASE("for one message, handlers are tried in order and the first that accepts it runs", "[receive]") {
  std::vector<int> which;
  auto r = run_node(herd::test::opts(1), [&] {
    herd::pid me = herd::self();
    herd::send(me, 5);
    herd::send(me, 50);
    // Two handlers for int: the first always wins.
    which.push_back(herd::receive([](int) { return 1; }, [](int) { return 2; }));
    // A guard that refuses passes the message on to the next handler.
    which.push_back(herd::receive(herd::when([](int v) { return v < 10; }, [](int) { return 1; }),
                                  [](int) { return 2; }));
  });
  CHECK(r.is_normal());
  CHECK(which == std::vector<int>{1, 2});
}

TEST_CASE("an any_message handler takes whatever the handlers before it refuse, oldest first", "[receive]") {
  std::vector<std::string> seen;
  int typed = 0, guarded_skips = 0;
  bool got_b = false;
  auto r = run_node(herd::test::opts(1), [&] {
    herd::pid me = herd::self();
    herd::send(me, junk{1});
    herd::send(me, a{7});
    herd::send(me, b{9});
    herd::send(me, std::string("text"));
    // a is taken by its own handler only when it is the oldest message left.
    for (int i = 0; i < 4; ++i)
      herd::receive([&](a x) { typed += x.v; },
                    [&](const herd::any_message& m) {
                      seen.emplace_back(m.type_name());
                      if (const b* pb = m.get<b>()) got_b = pb->v == 9;
                      CHECK(m.get<a>() == nullptr);
                    });
    // A guarded catch-all: what it refuses stays.
    herd::send(me, junk{2});
    herd::send(me, b{3});
    herd::receive(herd::when([&](const herd::any_message& m) { ++guarded_skips; return m.is<b>(); },
                             [](herd::any_message) {}));
    herd::receive([](junk) {}, herd::after(0ms, [] { FAIL("junk was taken"); }));
  });
  CHECK(r.is_normal());
  REQUIRE(seen.size() == 3);
  CHECK(seen[0] == "receive_test_msgs::junk");
  CHECK(seen[1] == "receive_test_msgs::b");
  CHECK(seen[2].find("basic_string") != std::string::npos);
  CHECK(typed == 7);
  CHECK(got_b);
  CHECK(guarded_skips == 2);
}

TEST_CASE("a guard skips the messages it refuses - they stay, in order", "[receive]") {
  unsigned workers = HERD_WORKERS();
  std::vector<int> big, rest;
  std::size_t left = 99;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    for (int v : {1, 20, 3, 40, 5}) herd::send(me, v);
    auto is_big = [](const int& v) { return v > 10; };
    for (int i = 0; i < 2; ++i) herd::receive(herd::when(is_big, [&](int v) { big.push_back(v); }));
    // Nothing big is left: a guarded receive with a zero timeout finds nothing.
    bool timed_out = false;
    herd::receive(herd::when(is_big, [&](int v) { big.push_back(v); }), herd::after(0ms, [&] { timed_out = true; }));
    if (!timed_out) big.push_back(-1);
    for (int i = 0; i < 3; ++i) herd::receive([&](int v) { rest.push_back(v); });
    left = herd::mailbox_size();
  });
  CHECK(r.is_normal());
  CHECK(big == std::vector<int>{20, 40});
  CHECK(rest == std::vector<int>{1, 3, 5});
  CHECK(left == 0);
}

TEST_CASE("a guard sees the message without consuming it - guards run per message, oldest first", "[receive]") {
  std::vector<int> guard_calls;
  int got = 0;
  auto r = run_node(herd::test::opts(1), [&] {
    herd::pid me = herd::self();
    for (int v : {1, 2, 3, 4}) herd::send(me, v);
    herd::receive(herd::when(
        [&](const int& v) {
          guard_calls.push_back(v);
          return v == 3;
        },
        [&](int v) { got = v; }));
    herd::receive([](int) {});
    herd::receive([](int) {});
    herd::receive([](int) {});
  });
  CHECK(r.is_normal());
  CHECK(got == 3);
  CHECK(guard_calls == std::vector<int>{1, 2, 3});
}

TEST_CASE("handlers take their message by value, const&, & or &&", "[receive]") {
  tracked::copies = 0;
  int live_before = tracked::live;
  std::vector<int> got;
  int live_inside_handler = -1;
  auto r = run_node(herd::test::opts(1), [&] {
    herd::pid me = herd::self();
    for (int i = 1; i <= 4; ++i) herd::send_new<tracked>(me, i);
    herd::receive([&](tracked t) { got.push_back(t.v); });
    herd::receive([&](const tracked& t) { got.push_back(t.v); });
    herd::receive([&](tracked& t) {
      got.push_back(t.v);
      t.v = 99;  // a mutable reference to the message itself
    });
    herd::receive([&](tracked&& t) {
      tracked mine(std::move(t));
      got.push_back(mine.v);
      live_inside_handler = tracked::live;
    });
    // Move-only messages work by value and by &&.
    herd::send(me, std::make_unique<int>(7));
    herd::send(me, std::make_unique<int>(8));
    herd::receive([&](std::unique_ptr<int> p) { got.push_back(*p); });
    herd::receive([&](std::unique_ptr<int>&& p) {
      auto q = std::move(p);
      got.push_back(*q);
    });
  });
  CHECK(r.is_normal());
  CHECK(got == std::vector<int>{1, 2, 3, 4, 7, 8});
  CHECK(tracked::copies == 0);  // a by-value handler moves the value out
  CHECK(live_inside_handler == live_before + 2);  // the message and the handler's own
  CHECK(tracked::live == live_before);            // every message was destroyed
}

TEST_CASE("receive returns what the handlers return", "[receive]") {
  int i1 = 0;
  long l1 = 0;
  std::string s1;
  int timeout_value = 0;
  auto r = run_node(herd::test::opts(1), [&] {
    herd::pid me = herd::self();
    herd::send(me, 21);
    i1 = herd::receive([](int v) { return v * 2; });
    herd::send(me, b{3});
    // int and long: the common type.
    l1 = herd::receive([](a x) { return x.v; }, [](b x) { return long(x.v) * 1000; });
    herd::send(me, std::string("hello"));
    s1 = herd::receive([](std::string s) { return s + "!"; });
    timeout_value = herd::receive([](int v) { return v; }, herd::after(0ms, [] { return -1; }));
  });
  CHECK(r.is_normal());
  CHECK(i1 == 42);
  CHECK(l1 == 3000);
  CHECK(s1 == "hello!");
  CHECK(timeout_value == -1);
}

TEST_CASE("after(0ms) returns at once when nothing matches, and leaves the mailbox alone", "[receive][timeout]") {
  unsigned workers = HERD_WORKERS();
  int fired = 0;
  std::size_t left = 0;
  int later = 0;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    herd::receive([](int) {}, herd::after(0ms, [&] { ++fired; }));  // empty mailbox
    herd::send(me, a{1});
    herd::receive([](int) {}, herd::after(0ms, [&] { ++fired; }));  // only a non-match
    herd::receive([](int) {}, herd::after(0ms));                     // the no-action form
    left = herd::mailbox_size();
    herd::receive([&](a x) { later = x.v; });
  });
  CHECK(r.is_normal());
  CHECK(fired == 2);
  CHECK(left == 1);
  CHECK(later == 1);
}

TEST_CASE("after fires after roughly the timeout", "[receive][timeout]") {
  unsigned workers = HERD_WORKERS();
  bool fired = false;
  double ms = 0;
  auto r = run_node(herd::test::opts(workers), [&] {
    auto t0 = herd::test::clk::now();
    herd::receive([](int) {}, herd::after(60ms, [&] { fired = true; }));
    ms = herd::test::ms_since(t0);
  });
  CHECK(r.is_normal());
  CHECK(fired);
  CHECK(ms >= 59);  // the clock counts whole milliseconds
}

TEST_CASE("messages that do not match do not reset or cut short a receive's timeout", "[receive][timeout]") {
  unsigned workers = HERD_WORKERS();
  bool fired = false, noisy_still_sending = false;
  double ms = 0;
  std::size_t junk_left = 0;
  // Junk every 10 ms for up to a minute: a timeout that each junk message
  // reset could only fire once the junk stops.
  const int junk_max = 6000;
  std::atomic<int> junk_sent{0};
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    herd::pid noisy = herd::spawn([me, &junk_sent] {
      for (int i = 0; i < junk_max; ++i) {
        herd::send(me, junk{i});
        ++junk_sent;
        // Its pace (the workload), not synchronisation; ends early on stop.
        if (herd::receive([](stop) { return true; }, herd::after(10ms, [] { return false; }))) return;
      }
      herd::receive([](stop) {});
    });
    auto t0 = herd::test::clk::now();
    herd::receive([](int) {}, herd::after(100ms, [&] { fired = true; }));
    ms = herd::test::ms_since(t0);
    noisy_still_sending = junk_sent.load() < junk_max;
    herd::send(noisy, stop{});
    herd::test::eventually_gone(noisy, 60s);
    junk_left = herd::mailbox_size();
    while (herd::mailbox_size() > 0) herd::receive([](junk) {});
  });
  CHECK(r.is_normal());
  CHECK(fired);
  CHECK(ms >= 99);
  CHECK(noisy_still_sending);  // it fired with junk still coming: not reset by each message
  CHECK(junk_left >= 1);
}

TEST_CASE("a message that arrives before the timeout disarms it: no timer is left armed", "[receive][timeout]") {
  unsigned workers = HERD_WORKERS();
  int got = 0;
  bool fired = false;
  uint64_t timers_after = 99;
  auto r = herd::test::run_node_with(herd::test::opts(workers), [&](herd::node& n) {
    herd::pid me = herd::self();
    herd::spawn([me] {
      herd::test::eventually_parked(me);  // the root waits, its timer armed
      herd::send(me, 7);
    });
    herd::receive([&](int v) { got = v; }, herd::after(1h, [&] { fired = true; }));
    // Ours was unlinked when the message came.
    herd::test::eventually([&] { return herd::test::armed_timers(n.runtime()) == 0; }, 60s);
    timers_after = herd::test::armed_timers(n.runtime());
  });
  CHECK(r.is_normal());
  CHECK(got == 7);
  CHECK_FALSE(fired);
  CHECK(timers_after == 0);
}

TEST_CASE("100,000 receives with a 5 s timeout, each satisfied, leave no timer armed",
          "[receive][timeout]") {
  unsigned workers = HERD_WORKERS();
  const int rounds = int(herd::test::scaled(100000, 10000));
  int answered = 0, timeouts = 0;
  uint64_t timers_after = 99;
  uint64_t max_timers_seen = 0;
  auto r = herd::test::run_node_with(herd::test::opts(workers), [&](herd::node& n) {
    herd::pid me = herd::self();
    herd::pid echo = herd::spawn([] {
      for (bool more = true; more;) {
        herd::receive([](ping p) { herd::send(p.from, pong{p.n}); },
                      [&](stop) {
                        more = false;
                      },
                      herd::after(5s, [] {}));
      }
      herd::receive([](ping p) { herd::send(p.from, bye{}); });
    });
    for (int i = 0; i < rounds; ++i) {
      herd::send(echo, ping{me, i});
      herd::receive([&](pong p) { answered += (p.n == i); }, herd::after(5s, [&] { ++timeouts; }));
      if (i % 4096 == 0) max_timers_seen = std::max(max_timers_seen, herd::test::armed_timers(n.runtime()));
    }
    herd::send(echo, stop{});
    herd::send(echo, ping{me, -1});
    herd::receive([](bye) {});
    timers_after = herd::test::armed_timers(n.runtime());
  });
  CHECK(r.is_normal());
  CHECK(answered == rounds);
  CHECK(timeouts == 0);
  CHECK(timers_after == 0);
  CHECK(max_timers_seen <= 2);  // eager unlinking: satisfied timeouts never pile up
}

TEST_CASE("receive_after(mark) finds a reply sent after the mark behind 100,000 unmatched messages",
          "[receive][mark]") {
  unsigned workers = HERD_WORKERS();
  const int junk_count = int(herd::test::scaled(100000, 20000));
  const int rounds = 1000;
  int replies = 0;
  std::size_t size_after = 0;
  bool junk_in_order = true;
  int junk_seen = 0;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    herd::pid server = herd::spawn([] {
      for (bool more = true; more;)
        herd::receive([](request q) { herd::send(q.from, reply{q.n}); }, [&](stop) { more = false; });
    });
    for (int i = 0; i < junk_count; ++i) herd::send(me, junk{i});
    for (int i = 0; i < rounds; ++i) {
      herd::receive_mark m = herd::mark_mailbox();
      herd::send(server, request{me, i});
      herd::receive_after(m, [&](reply x) { replies += (x.n == i); });
    }
    herd::send(server, stop{});
    size_after = herd::mailbox_size();
    for (int i = 0; i < junk_count; ++i)
      herd::receive([&](junk j) {
        if (j.n != junk_seen) junk_in_order = false;
        ++junk_seen;
      }, herd::after(0ms));
  });
  CHECK(r.is_normal());
  CHECK(replies == rounds);
  CHECK(size_after == std::size_t(junk_count));
  CHECK(junk_seen == junk_count);
  CHECK(junk_in_order);
}

TEST_CASE("receive_after(mark) ignores matching messages that arrived before the mark", "[receive][mark]") {
  std::vector<int> got;
  auto r = run_node(herd::test::opts(1), [&] {
    herd::pid me = herd::self();
    herd::send(me, reply{1});
    herd::send(me, junk{0});
    herd::receive_mark m = herd::mark_mailbox();
    herd::send(me, reply{2});
    herd::receive_after(m, [&](reply x) { got.push_back(x.n); });
    // Nothing after the mark any more: times out although reply{1} is there.
    herd::receive_after(m, [&](reply x) { got.push_back(x.n); }, herd::after(0ms, [&] { got.push_back(-1); }));
    // A plain receive still sees it.
    herd::receive([&](reply x) { got.push_back(x.n); });
    herd::receive([](junk) {});
  });
  CHECK(r.is_normal());
  CHECK(got == std::vector<int>{2, -1, 1});
}

TEST_CASE("a receive mark stays valid when the message it points at is received", "[receive][mark]") {
  std::vector<int> got;
  auto r = run_node(herd::test::opts(1), [&] {
    herd::pid me = herd::self();
    herd::send(me, junk{0});
    herd::send(me, junk{1});  // the mark points at this one
    herd::receive_mark m = herd::mark_mailbox();
    herd::receive([](junk j) { (void)j; }, herd::after(0ms));  // takes junk{0}
    herd::receive([](junk j) { (void)j; }, herd::after(0ms));  // takes junk{1}: the marked message
    herd::send(me, reply{5});
    herd::send(me, reply{6});
    herd::receive_after(m, [&](reply x) { got.push_back(x.n); });
    herd::receive_after(m, [&](reply x) { got.push_back(x.n); });
  });
  CHECK(r.is_normal());
  CHECK(got == std::vector<int>{5, 6});
}

TEST_CASE("after(infinity), huge and negative timeouts", "[receive][timeout]") {
  unsigned workers = HERD_WORKERS();
  int inf = 0, huge = 0, near_max = 0, negative = 0;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    auto later = [me](int v) {
      herd::spawn([me, v] {
        herd::test::eventually_parked(me);  // the root waits with its long deadline armed
        herd::send(me, v);
      });
    };
    later(1);
    inf = herd::receive([](int v) { return v; }, herd::after(herd::infinity, [] { return -1; }));
    later(2);  // a deadline ~1000 years away must not overflow into "now"
    huge = herd::receive([](int v) { return v; }, herd::after(std::chrono::hours(24 * 365 * 1000), [] { return -1; }));
    later(3);
    near_max = herd::receive([](int v) { return v; },
                             herd::after(std::chrono::milliseconds::max() - 1ms, [] { return -1; }));
    // A negative timeout fires at once; wrapped to a huge one it would hang the test.
    negative = herd::receive([](int v) { return v; }, herd::after(-5ms, [] { return -1; }));
  });
  CHECK(r.is_normal());
  CHECK(inf == 1);
  CHECK(huge == 2);
  CHECK(near_max == 3);
  CHECK(negative == -1);
}

TEST_CASE("a receive with only an after clause waits the timeout and takes nothing", "[receive][timeout]") {
  double ms = 0;
  std::size_t left = 0;
  auto r = run_node(herd::test::opts(2), [&] {
    herd::send(herd::self(), 4);
    auto t0 = herd::test::clk::now();
    herd::receive(herd::after(30ms));
    ms = herd::test::ms_since(t0);
    left = herd::mailbox_size();
    herd::receive([](int) {});
  });
  CHECK(r.is_normal());
  CHECK(ms >= 29);
  CHECK(left == 1);
}

namespace receive_test_msgs {
int twice(int v) { return 2 * v; }
}  // namespace receive_test_msgs

TEST_CASE("handlers may be function pointers and mutable lambdas", "[receive]") {
  int a1 = 0, calls = 0;
  auto r = run_node(herd::test::opts(1), [&] {
    herd::pid me = herd::self();
    herd::send(me, 21);
    a1 = herd::receive(&receive_test_msgs::twice);
    herd::send(me, 1);
    herd::send(me, 2);
    int n = 0;
    auto counting = [n](int) mutable { return ++n; };
    herd::receive(counting);
    calls = herd::receive(counting);  // the same lambda object keeps its count
  });
  CHECK(r.is_normal());
  CHECK(a1 == 42);
  CHECK(calls == 2);
}

TEST_CASE("a handler that throws: the message is consumed and freed, the exception propagates", "[receive]") {
  std::string what;
  std::size_t left = 99;
  int live_inside = -1;
  int live_before = tracked::live;
  auto r = run_node(herd::test::opts(2), [&] {
    herd::pid me = herd::self();
    herd::send_new<tracked>(me, 1);
    herd::send(me, 2);
    try {
      herd::receive([&](const tracked&) {
        live_inside = tracked::live;
        throw std::runtime_error("handler");
      });
    } catch (const std::runtime_error& e) {
      what = e.what();
    }
    left = herd::mailbox_size();
    herd::receive([](int) {});
  });
  CHECK(r.is_normal());
  CHECK(what == "handler");
  CHECK(live_inside == live_before + 1);
  CHECK(tracked::live == live_before);
  CHECK(left == 1);
}

TEST_CASE("a guard that throws: the exception propagates and the message stays", "[receive]") {
  std::string what;
  std::vector<int> later;
  auto r = run_node(herd::test::opts(2), [&] {
    herd::pid me = herd::self();
    herd::send(me, 1);
    herd::send(me, 2);
    try {
      herd::receive(herd::when([](int v) -> bool { if (v == 2) throw std::logic_error("guard"); return false; },
                               [](int) {}));
    } catch (const std::logic_error& e) {
      what = e.what();
    }
    for (int i = 0; i < 2; ++i) herd::receive([&](int v) { later.push_back(v); });
  });
  CHECK(r.is_normal());
  CHECK(what == "guard");
  CHECK(later == std::vector<int>{1, 2});
}

TEST_CASE("a handler may receive again (nested receive) and send to itself", "[receive]") {
  std::vector<int> got;
  auto r = run_node(herd::test::opts(2), [&] {
    herd::pid me = herd::self();
    herd::send(me, a{1});
    herd::send(me, b{2});
    herd::receive([&](a x) {
      got.push_back(x.v);
      herd::send(me, a{3});
      herd::receive([&](b y) { got.push_back(y.v); });
      herd::receive([&](a z) { got.push_back(z.v); });
    });
  });
  CHECK(r.is_normal());
  CHECK(got == std::vector<int>{1, 2, 3});
}
