// Exit signals sent with exit(pid, reason) (kill, normal, shutdown, to a
// trapping process or not), and their order against messages, as Erlang's
// reference manual ("Processes": exit signals) states them. One test per rule.
#include "links_fixture.hpp"

#include <string>

using namespace std::chrono_literals;
using herd::test::dtor_probe;
using herd::test::run_node;
using namespace links_test_msgs;

// ---------------------------------------------------------------------------
// exit(pid, reason)
// ---------------------------------------------------------------------------

TEST_CASE("exit(pid, kill) cannot be trapped: the target ends with killed and its destructors run", "[links]") {
  unsigned workers = HERD_WORKERS();
  std::atomic<int> trapped{0}, dtors{0};
  std::optional<herd::exit_reason> reason;
  auto r = run_node(opts(workers), [&] {
    herd::pid me = herd::self();
    auto [t, ref] = herd::spawn_monitor([&, me] {
      dtor_probe probe(dtors);
      herd::trap_exit(true);
      herd::send(me, ready{herd::self()});
      for (;;) herd::receive([&](herd::exit_msg) { ++trapped; }, [](stop) {});
    });
    herd::receive([](ready) {});
    herd::exit(t, herd::exit_reason::kill());
    reason = down_reason(ref);
  });
  CHECK(r.is_normal());
  REQUIRE(reason.has_value());
  CHECK(reason->kind() == herd::exit_kind::killed);
  CHECK(trapped == 0);
  CHECK(dtors == 1);
}

TEST_CASE("the links of a killed process see killed: a trapping one gets exit_msg, another dies with killed",
          "[links]") {
  unsigned workers = HERD_WORKERS();
  std::optional<herd::exit_reason> target_reason, untrapped_reason;
  bool got = false;
  herd::pid target, from;
  herd::exit_reason trapped_reason;
  auto r = run_node(opts(workers), [&] {
    herd::pid me = herd::self();
    target = herd::spawn([] { serve(); });
    herd::pid t = target;
    herd::spawn([me, t] {
      herd::trap_exit(true);
      herd::link(t);
      herd::send(me, linked{});
      if (auto e = next_exit_msg(5s)) herd::send(me, got_exit{e->from, e->reason});
      else herd::send(me, nothing_came{});
    });
    herd::receive([](linked) {});
    auto [n, nref] = herd::spawn_monitor([me, t] {
      herd::link(t);
      herd::send(me, linked{});
      serve();
    });
    herd::receive([](linked) {});
    auto tref = herd::monitor(t);
    herd::exit(t, herd::exit_reason::kill());
    herd::receive([&](got_exit g) { got = true; from = g.from; trapped_reason = g.reason; }, [](nothing_came) {});
    target_reason = down_reason(tref);
    untrapped_reason = down_reason(nref);
  });
  CHECK(r.is_normal());
  REQUIRE(target_reason.has_value());
  CHECK(target_reason->kind() == herd::exit_kind::killed);
  REQUIRE(got);
  CHECK(from == target);
  CHECK(trapped_reason.kind() == herd::exit_kind::killed);
  REQUIRE(untrapped_reason.has_value());
  CHECK(untrapped_reason->kind() == herd::exit_kind::killed);
}

TEST_CASE("exit(pid, normal) to another process that does not trap exits is ignored", "[links]") {
  unsigned workers = HERD_WORKERS();
  bool answered = false;
  std::optional<herd::exit_reason> reason;
  auto r = run_node(opts(workers), [&] {
    auto [t, ref] = herd::spawn_monitor([] { serve(); });
    herd::exit(t, herd::exit_reason::normal());
    answered = answers(t);  // the ping comes after the signal, from the same sender
    herd::send(t, stop{});
    reason = down_reason(ref);
  });
  CHECK(r.is_normal());
  CHECK(answered);
  REQUIRE(reason.has_value());
  CHECK(reason->is_normal());
}

TEST_CASE("exit(self(), normal) ends the process normally at its next blocking point", "[links]") {
  unsigned workers = HERD_WORKERS();
  std::atomic<bool> after_call{false}, after_receive{false};
  std::atomic<int> dtors{0};
  std::optional<herd::exit_reason> reason;
  auto r = run_node(opts(workers), [&] {
    auto [t, ref] = herd::spawn_monitor([&] {
      dtor_probe probe(dtors);
      herd::exit(herd::self(), herd::exit_reason::normal());
      after_call = true;
      herd::receive([](stop) {});
      after_receive = true;
    });
    reason = down_reason(ref);
  });
  CHECK(r.is_normal());
  REQUIRE(reason.has_value());
  CHECK(reason->is_normal());
  CHECK(after_call);
  CHECK_FALSE(after_receive);
  CHECK(dtors == 1);
}

TEST_CASE("exit(pid, normal) to a process that traps exits becomes exit_msg{from, normal}", "[links]") {
  unsigned workers = HERD_WORKERS();
  std::vector<got_exit> seen;
  herd::pid root, target;
  auto r = run_node(opts(workers), [&] {
    herd::pid me = herd::self();
    root = me;
    auto [t, ref] = herd::spawn_monitor([&, me] {
      herd::trap_exit(true);
      herd::send(me, ready{herd::self()});
      if (auto e = next_exit_msg(5s)) seen.push_back(got_exit{e->from, e->reason});
      // To itself, too: a trapping process gets the message rather than ending.
      herd::exit(herd::self(), herd::exit_reason::normal());
      if (auto e = next_exit_msg(5s)) seen.push_back(got_exit{e->from, e->reason});
    });
    target = t;
    herd::receive([](ready) {});
    herd::exit(t, herd::exit_reason::normal());
    down_reason(ref);
  });
  CHECK(r.is_normal());
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].from == root);
  CHECK(seen[0].reason.is_normal());
  CHECK(seen[1].from == target);
  CHECK(seen[1].reason.is_normal());
}

TEST_CASE("exit(pid, shutdown) ends a process that does not trap exits with shutdown", "[links]") {
  unsigned workers = HERD_WORKERS();
  std::optional<herd::exit_reason> reason;
  std::atomic<int> dtors{0};
  auto r = run_node(opts(workers), [&] {
    auto [t, ref] = herd::spawn_monitor([&] {
      dtor_probe probe(dtors);
      serve();
    });
    herd::exit(t, herd::exit_reason::shutdown("detail"));
    reason = down_reason(ref);
  });
  CHECK(r.is_normal());
  REQUIRE(reason.has_value());
  CHECK(reason->kind() == herd::exit_kind::shutdown);
  CHECK(*reason == herd::exit_reason::shutdown("detail"));
  CHECK(dtors == 1);
}


// ---------------------------------------------------------------------------
// Rule 3: order (links and exit/2; monitors are in monitor_test.cpp)
// ---------------------------------------------------------------------------

TEST_CASE("messages a process sent before it failed reach a trapping linked receiver before the exit_msg",
          "[links]") {
  unsigned workers = HERD_WORKERS();
  const int n = 1000;
  std::vector<int> order;  // message numbers, -1 for the exit_msg
  bool from_ok = false;
  auto r = run_node(opts(workers), [&] {
    herd::trap_exit(true);
    herd::pid me = herd::self();
    herd::pid s = herd::spawn_link([me, n] {
      for (int i = 0; i < n; ++i) herd::send(me, seq{i});
      throw link_error("after the messages");
    });
    for (bool done = false; !done;) {
      herd::receive([&](seq x) { order.push_back(x.n); },
                    [&](herd::exit_msg e) {
                      order.push_back(-1);
                      from_ok = e.from == s && e.reason == link_err("after the messages");
                      done = true;
                    },
                    herd::after(5s, [&] { done = true; }));
    }
  });
  CHECK(r.is_normal());
  REQUIRE(order.size() == std::size_t(n) + 1);
  bool in_order = true;
  for (int i = 0; i < n; ++i) in_order = in_order && order[std::size_t(i)] == i;
  CHECK(in_order);
  CHECK(order.back() == -1);
  CHECK(from_ok);
}

TEST_CASE("messages sent before exit(pid, reason) reach a trapping receiver before the exit_msg", "[links]") {
  unsigned workers = HERD_WORKERS();
  const int n = 1000;
  std::vector<int> order;
  bool from_ok = false;
  auto r = run_node(opts(workers), [&] {
    herd::trap_exit(true);
    herd::pid me = herd::self();
    herd::pid s = herd::spawn([me, n] {
      for (int i = 0; i < n; ++i) herd::send(me, seq{i});
      herd::exit(me, herd::exit_reason::shutdown("after the messages"));
    });
    for (bool done = false; !done;) {
      herd::receive([&](seq x) { order.push_back(x.n); },
                    [&](herd::exit_msg e) {
                      order.push_back(-1);
                      from_ok = e.from == s && e.reason == herd::exit_reason::shutdown("after the messages");
                      done = true;
                    },
                    herd::after(5s, [&] { done = true; }));
    }
  });
  CHECK(r.is_normal());
  REQUIRE(order.size() == std::size_t(n) + 1);
  bool in_order = true;
  for (int i = 0; i < n; ++i) in_order = in_order && order[std::size_t(i)] == i;
  CHECK(in_order);
  CHECK(order.back() == -1);
  CHECK(from_ok);
}

// The drain files a batch of only user messages in one splice and walks any
// other batch message by message: an exit signal between two runs of user
// messages, all queued while the receiver waits for something else, still
// comes out between them.
TEST_CASE("an exit_msg between two runs of messages from one sender comes out between them", "[links]") {
  unsigned workers = HERD_WORKERS();
  const int n = 500;
  std::vector<int> order;  // message numbers, -1 for the exit_msg
  auto r = run_node(opts(workers), [&] {
    herd::trap_exit(true);
    herd::pid me = herd::self();
    herd::spawn([me, n] {
      for (int i = 0; i < n; ++i) herd::send(me, seq{i});
      herd::exit(me, herd::exit_reason::shutdown("between"));
      for (int i = n; i < 2 * n; ++i) herd::send(me, seq{i});
      herd::send(me, std::string("last"));
    });
    herd::receive([](const std::string&) {});  // everything before it is queued and filed now
    for (int k = 0; k < 2 * n + 1; ++k)
      herd::receive([&](seq x) { order.push_back(x.n); }, [&](herd::exit_msg) { order.push_back(-1); },
                    herd::after(5s, [] {}));
  });
  CHECK(r.is_normal());
  REQUIRE(order.size() == std::size_t(2 * n) + 1);
  bool in_order = true;
  for (int i = 0; i < n; ++i) in_order = in_order && order[std::size_t(i)] == i;
  CHECK(order[std::size_t(n)] == -1);
  for (int i = n; i < 2 * n; ++i) in_order = in_order && order[std::size_t(i) + 1] == i;
  CHECK(in_order);
}

