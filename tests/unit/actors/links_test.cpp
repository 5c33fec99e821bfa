// Links, as Erlang's reference manual ("Processes": links, exit signals,
// trap_exit) states them: both directions, normal exits, trap_exit, unlink,
// links to dead processes, hibernated ends, and a link that crosses an
// unlink. One test per rule; exit(pid, reason) and the order of signals are
// in exit_signals_test.cpp, dying in C++ in exit_unwind_test.cpp.
#include "links_fixture.hpp"

#include <utility>

using namespace std::chrono_literals;
using herd::test::dtor_probe;
using herd::test::run_node;
using namespace links_test_msgs;

// ---------------------------------------------------------------------------
// Rule 1: links
// ---------------------------------------------------------------------------

TEST_CASE("a link is bidirectional: an abnormal exit at either end ends the other end with the same reason",
          "[links]") {
  unsigned workers = HERD_WORKERS();
  std::optional<herd::exit_reason> reasons[2][2];  // [which end failed][linker, target]
  auto r = run_node(opts(workers), [&] {
    herd::pid me = herd::self();
    for (int failing = 0; failing < 2; ++failing) {
      herd::pid target = herd::spawn([] { serve(); });
      herd::pid linker = herd::spawn([me, target] {
        herd::link(target);  // only the linker asks for the link
        herd::send(me, linked{});
        serve();
      });
      herd::receive([](linked) {});
      auto ref_linker = herd::monitor(linker);
      auto ref_target = herd::monitor(target);
      herd::send(failing == 0 ? target : linker, fail{"end " + std::to_string(failing)});
      reasons[failing][0] = down_reason(ref_linker);
      reasons[failing][1] = down_reason(ref_target);
    }
  });
  CHECK(r.is_normal());
  for (int failing = 0; failing < 2; ++failing) {
    INFO("the failing end: " << (failing == 0 ? "the linked target" : "the process that called link"));
    for (int i = 0; i < 2; ++i) {
      REQUIRE(reasons[failing][i].has_value());
      CHECK(*reasons[failing][i] == link_err("end " + std::to_string(failing)));
    }
  }
}

TEST_CASE("spawn_link links the child before it runs, in both directions", "[links]") {
  unsigned workers = HERD_WORKERS();
  std::optional<herd::exit_reason> parent_of_early, parent_failed, child_of_failed;
  herd::pid early_child, trapped_from;
  herd::exit_reason trapped_reason;
  bool trapped = false;
  auto r = run_node(opts(workers), [&] {
    herd::pid me = herd::self();
    // A child that fails before its first blocking point takes its parent along.
    auto [p1, ref1] = herd::spawn_monitor([] {
      herd::spawn_link([] { throw link_error("early"); });
      serve();
    });
    parent_of_early = down_reason(ref1);

    // A trapping parent sees exit_msg{child, reason} with the pid spawn_link gave it.
    herd::spawn([me] {
      herd::trap_exit(true);
      herd::pid c = herd::spawn_link([] { throw link_error("early"); });
      herd::send(me, ready{c});
      auto e = next_exit_msg(5s);
      if (e) herd::send(me, got_exit{e->from, e->reason});
      else herd::send(me, nothing_came{});
    });
    herd::receive([&](ready x) { early_child = x.who; });
    herd::receive([&](got_exit g) { trapped = true; trapped_from = g.from; trapped_reason = g.reason; },
                  [](nothing_came) {});

    // A parent that fails takes its spawn_linked child along.
    auto [p2, ref2] = herd::spawn_monitor([me] {
      herd::pid c = herd::spawn_link([] { serve(); });
      herd::send(me, ready{c});
      serve();
    });
    herd::pid child = herd::receive([](ready x) { return x.who; });
    auto ref_child = herd::monitor(child);
    herd::send(p2, fail{"parent"});
    parent_failed = down_reason(ref2);
    child_of_failed = down_reason(ref_child);
  });
  CHECK(r.is_normal());
  REQUIRE(parent_of_early.has_value());
  CHECK(*parent_of_early == link_err("early"));
  REQUIRE(trapped);
  CHECK(trapped_from == early_child);
  CHECK(trapped_reason == link_err("early"));
  REQUIRE(parent_failed.has_value());
  CHECK(*parent_failed == link_err("parent"));
  REQUIRE(child_of_failed.has_value());
  CHECK(*child_of_failed == link_err("parent"));
}

TEST_CASE("a linked process's normal exit is ignored by a process that does not trap exits", "[links]") {
  unsigned workers = HERD_WORKERS();
  bool said_alive = false, answered = false;
  std::optional<herd::exit_reason> reason;
  auto r = run_node(opts(workers), [&] {
    herd::pid me = herd::self();
    auto [p, ref] = herd::spawn_monitor([me] {
      herd::pid c = herd::spawn_link([] { herd::receive([](go) {}); });
      auto cref = herd::monitor(c);
      herd::send(c, go{});
      // The link's exit signal was sent before this down: it has been acted on.
      if (down_reason(cref)) herd::send(me, alive{});
      serve();
    });
    said_alive = herd::receive([](alive) { return true; }, herd::after(5s, [] { return false; }));
    answered = answers(p);
    herd::send(p, stop{});
    reason = down_reason(ref);
  });
  CHECK(r.is_normal());
  CHECK(said_alive);
  CHECK(answered);
  REQUIRE(reason.has_value());
  CHECK(reason->is_normal());
}

TEST_CASE("a process that traps exits gets exit_msg{from, normal} when a linked process ends normally", "[links]") {
  unsigned workers = HERD_WORKERS();
  bool got = false;
  herd::pid child, from;
  herd::exit_reason reason = herd::exit_reason::kill();
  auto r = run_node(opts(workers), [&] {
    herd::pid me = herd::self();
    herd::spawn([me] {
      herd::trap_exit(true);
      herd::pid c = herd::spawn_link([] { herd::receive([](go) {}); });
      herd::send(me, ready{c});
      herd::send(c, go{});
      if (auto e = next_exit_msg(5s)) herd::send(me, got_exit{e->from, e->reason});
      else herd::send(me, nothing_came{});
    });
    child = herd::receive([](ready x) { return x.who; });
    herd::receive([&](got_exit g) { got = true; from = g.from; reason = g.reason; }, [](nothing_came) {});
  });
  CHECK(r.is_normal());
  REQUIRE(got);
  CHECK(from == child);
  CHECK(reason.is_normal());
}

TEST_CASE("a non-normal exit travels along links: a chain of three linked processes all end with its reason",
          "[links]") {
  unsigned workers = HERD_WORKERS();
  std::optional<herd::exit_reason> reasons[3];
  auto r = run_node(opts(workers), [&] {
    herd::pid me = herd::self();
    // a -- b -- c, each spawn_links the next; the root is linked to none.
    herd::spawn([me] {
      herd::send(me, chain_member{0, herd::self()});
      herd::spawn_link([me] {
        herd::send(me, chain_member{1, herd::self()});
        herd::spawn_link([me] {
          herd::send(me, chain_member{2, herd::self()});
          serve();
        });
        serve();
      });
      serve();
    });
    herd::pid chain[3];
    herd::monitor_ref refs[3];
    for (int i = 0; i < 3; ++i) herd::receive([&](chain_member x) { chain[x.i] = x.who; });
    for (int i = 0; i < 3; ++i) refs[i] = herd::monitor(chain[i]);
    herd::send(chain[2], fail{"end of the chain"});
    for (int i = 0; i < 3; ++i) reasons[i] = down_reason(refs[i]);
  });
  CHECK(r.is_normal());
  for (int i = 0; i < 3; ++i) {
    INFO("process " << i << " of the chain");
    REQUIRE(reasons[i].has_value());
    CHECK(*reasons[i] == link_err("end of the chain"));
  }
}

TEST_CASE("trap_exit(true) turns exit signals into exit_msg{from, reason} messages and the process lives on",
          "[links]") {
  unsigned workers = HERD_WORKERS();
  bool first_prev = true, trapping_seen = false, second_prev = false, trapping_after = true;
  std::vector<got_exit> seen;
  herd::pid child, root;
  bool answered = false;
  std::optional<herd::exit_reason> reason;
  auto r = run_node(opts(workers), [&] {
    herd::pid me = herd::self();
    root = me;
    auto [p, ref] = herd::spawn_monitor([&, me] {
      first_prev = herd::trap_exit(true);
      trapping_seen = herd::trapping_exits();
      herd::pid c = herd::spawn_link([] { serve(); });
      herd::send(me, ready{c});
      for (int i = 0; i < 2; ++i) {
        auto e = next_exit_msg(5s);
        if (!e) break;
        seen.push_back(got_exit{e->from, e->reason});
      }
      second_prev = herd::trap_exit(false);
      trapping_after = herd::trapping_exits();
      serve();
    });
    child = herd::receive([](ready x) { return x.who; });
    herd::exit(child, herd::exit_reason::shutdown("via link"));  // reaches p through the link
    auto cref = herd::monitor(child);
    down_reason(cref);
    herd::exit(p, herd::exit_reason::error("some_type", "via exit/2"));  // sent to p directly
    answered = answers(p);
    herd::send(p, stop{});
    reason = down_reason(ref);
  });
  CHECK(r.is_normal());
  CHECK_FALSE(first_prev);
  CHECK(trapping_seen);
  CHECK(second_prev);
  CHECK_FALSE(trapping_after);
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].from == child);
  CHECK(seen[0].reason == herd::exit_reason::shutdown("via link"));
  CHECK(seen[1].from == root);
  CHECK(seen[1].reason == herd::exit_reason::error("some_type", "via exit/2"));
  CHECK(answered);
  REQUIRE(reason.has_value());
  CHECK(reason->is_normal());
}


TEST_CASE("link to a dead or unknown pid sends the caller an exit signal noproc, which ends it", "[links]") {
  unsigned workers = HERD_WORKERS();
  std::optional<herd::exit_reason> reasons[2];
  std::atomic<int> reached_receive{0}, after_receive{0};
  auto r = run_node(opts(workers), [&] {
    auto [dead, dref] = herd::spawn_monitor([] {});
    down_reason(dref);
    herd::pid me = herd::self();
    herd::pid unknown{me.index, me.generation + 1000};  // a slot in use, another generation
    herd::pid targets[2] = {dead, unknown};
    for (int i = 0; i < 2; ++i) {
      herd::pid x = targets[i];
      auto [p, ref] = herd::spawn_monitor([&, x] {
        herd::link(x);
        ++reached_receive;  // link itself does not end the caller
        herd::receive([](stop) {});
        ++after_receive;
      });
      reasons[i] = down_reason(ref);
    }
  });
  CHECK(r.is_normal());
  for (int i = 0; i < 2; ++i) {
    INFO((i == 0 ? "a dead pid" : "an unknown pid"));
    REQUIRE(reasons[i].has_value());
    CHECK(reasons[i]->kind() == herd::exit_kind::noproc);
  }
  CHECK(reached_receive == 2);
  CHECK(after_receive == 0);
}

TEST_CASE("link to a dead or unknown pid gives a caller that traps exits exit_msg{pid, noproc}", "[links]") {
  unsigned workers = HERD_WORKERS();
  std::vector<got_exit> seen;
  herd::pid targets[2];
  auto r = run_node(opts(workers), [&] {
    auto [dead, dref] = herd::spawn_monitor([] {});
    down_reason(dref);
    herd::pid me = herd::self();
    targets[0] = dead;
    targets[1] = herd::pid{me.index, me.generation + 1000};
    auto [p, ref] = herd::spawn_monitor([&] {
      herd::trap_exit(true);
      for (herd::pid x : targets) {
        herd::link(x);
        if (auto e = next_exit_msg(5s)) seen.push_back(got_exit{e->from, e->reason});
      }
    });
    down_reason(ref);
  });
  CHECK(r.is_normal());
  REQUIRE(seen.size() == 2);
  for (int i = 0; i < 2; ++i) {
    CHECK(seen[i].from == targets[i]);
    CHECK(seen[i].reason.kind() == herd::exit_kind::noproc);
  }
}

TEST_CASE("after unlink no exit signal arrives from that link, in either direction", "[links]") {
  unsigned workers = HERD_WORKERS();
  // [0]: not trapping exits, [1]: trapping.
  bool unlinker_answered[2] = {false, false}, other_answered[2] = {false, false};
  std::optional<herd::exit_reason> unlinker_reason[2], other_reason[2], failing_unlinker_reason[2];
  std::atomic<int> stray_exit_msgs{0};
  auto r = run_node(opts(workers), [&] {
    herd::pid me = herd::self();
    // 1. The other end fails after unlink -- here even with its exit signal
    //    already on its way: the spawn_linked child fails before its first
    //    blocking point, before spawn_link returns.
    for (int trapping = 0; trapping < 2; ++trapping) {
      auto [u, uref] = herd::spawn_monitor([&, me, trapping] {
        if (trapping) herd::trap_exit(true);
        herd::pid c = herd::spawn_link([] { throw link_error("after unlink"); });
        herd::unlink(c);
        herd::receive([&](herd::exit_msg) { ++stray_exit_msgs; }, herd::after(50ms));
        herd::send(me, alive{});
        serve();
      });
      herd::receive([](alive) {}, herd::after(5s));
      unlinker_answered[trapping] = answers(u);
      herd::send(u, stop{});
      unlinker_reason[trapping] = down_reason(uref);
    }
    // 2. The process that unlinked fails: the other end is not told.
    for (int trapping = 0; trapping < 2; ++trapping) {
      auto [o, oref] = herd::spawn_monitor([&, trapping] {
        if (trapping) herd::trap_exit(true);
        for (bool done = false; !done;) {
          herd::receive([&](stop) { done = true; }, [](ping p) { herd::send(p.from, pong{}); },
                        [&](herd::exit_msg) { ++stray_exit_msgs; });
        }
      });
      auto [u, uref] = herd::spawn_monitor([o] {
        herd::link(o);
        herd::unlink(o);
        throw link_error("unlinker fails");
      });
      // A dying process sends its links' exit signals before its downs
      // (announce_death): any stray one is in o's mailbox before our ping.
      failing_unlinker_reason[trapping] = down_reason(uref);
      other_answered[trapping] = answers(o);
      herd::send(o, stop{});
      other_reason[trapping] = down_reason(oref);
    }
  });
  CHECK(r.is_normal());
  for (int t = 0; t < 2; ++t) {
    INFO((t ? "trapping" : "not trapping"));
    CHECK(unlinker_answered[t]);
    REQUIRE(unlinker_reason[t].has_value());
    CHECK(unlinker_reason[t]->is_normal());
    CHECK(other_answered[t]);
    REQUIRE(other_reason[t].has_value());
    CHECK(other_reason[t]->is_normal());
    REQUIRE(failing_unlinker_reason[t].has_value());
    CHECK(*failing_unlinker_reason[t] == link_err("unlinker fails"));
  }
  CHECK(stray_exit_msgs == 0);
}

TEST_CASE("an exception's type and what() travel through a link as the exit reason", "[links]") {
  unsigned workers = HERD_WORKERS();
  std::vector<herd::exit_reason> trapped;
  std::optional<herd::exit_reason> untrapped;
  auto r = run_node(opts(workers), [&] {
    herd::pid me = herd::self();
    auto [p, ref] = herd::spawn_monitor([&] {
      herd::trap_exit(true);
      herd::spawn_link([] { throw other_error("payload"); });
      herd::spawn_link([] { throw 42; });
      for (int i = 0; i < 2; ++i)
        if (auto e = next_exit_msg(5s)) trapped.push_back(e->reason);
    });
    down_reason(ref);
    auto [q, qref] = herd::spawn_monitor([me] {
      herd::pid c = herd::spawn_link([] {
        herd::receive([](go) {});
        throw other_error("through the link");
      });
      herd::send(c, go{});
      serve();
    });
    untrapped = down_reason(qref);
  });
  CHECK(r.is_normal());
  REQUIRE(trapped.size() == 2);
  // Two children, two senders: Erlang orders signals per pair of processes
  // only, so either exit may come first (on a loaded machine, it does).
  if (trapped[0].type() == "int") std::swap(trapped[0], trapped[1]);
  CHECK(trapped[0].kind() == herd::exit_kind::error);
  CHECK(trapped[0].type() == "links_test_msgs::other_error");
  CHECK(trapped[0].what() == "payload");
  CHECK(trapped[1].kind() == herd::exit_kind::error);
  CHECK(trapped[1].type() == "int");
  REQUIRE(untrapped.has_value());
  CHECK(*untrapped == herd::exit_reason::error("links_test_msgs::other_error", "through the link"));
}


TEST_CASE("a hibernated process is not woken by a link or monitor request alone, but is by a message", "[links]") {
  unsigned workers = HERD_WORKERS();
  std::atomic<int> runs{0};
  int runs_after_requests = -1, runs_after_message = -1;
  bool got_exit = false, hibernated = false;
  herd::exit_reason link_reason;
  std::optional<herd::exit_reason> reason;
  auto r = run_node(opts(workers), [&] {
    herd::trap_exit(true);
    auto [h, ref] = herd::spawn_monitor([&]() -> herd::hibernation {
      return herd::hibernated([&runs] {
        ++runs;
        herd::receive([](go) {});
        throw link_error("woken");
      });
    });
    hibernated = herd::test::eventually_hibernated(h);
    herd::link(h);
    auto ref2 = herd::monitor(h);
    herd::demonitor(ref2);
    // Not synchronisation: an interval in which a wake-up must not happen
    // (it would show as a run); nothing marks its absence.
    herd::sleep(50ms);
    runs_after_requests = runs.load();
    herd::send(h, go{});
    reason = down_reason(ref);
    runs_after_message = runs.load();
    // The link made while it slept holds: its exit reaches us.
    if (auto e = next_exit_msg(5s)) {
      got_exit = e->from == h;
      link_reason = e->reason;
    }
  });
  CHECK(r.is_normal());
  CHECK(hibernated);
  CHECK(runs_after_requests == 0);
  CHECK(runs_after_message == 1);
  REQUIRE(reason.has_value());
  CHECK(*reason == link_err("woken"));
  CHECK(got_exit);
  CHECK(link_reason == link_err("woken"));
}

// BUG: links are kept as a plain set on each side with no unlink/link
// sequence, so a link request that crosses an unlink leaves the two sides
// disagreeing: here A ends with B in its links while B has dropped A. A's
// later link(B) then sees B already in its own list and sends nothing, so
// the link it asked for does not exist and B's failure never reaches A.
// (Erlang keeps both sides consistent; after link/1 returns, the processes
// are linked.)
TEST_CASE("link after a link request crossed an unlink still links both ways", "[links]") {
  unsigned workers = HERD_WORKERS();
  INFO("workers: " << workers);
  std::optional<herd::exit_reason> a_reason, b_reason;
  auto r = run_node(opts(workers), [&] {
    herd::pid me = herd::self();
    auto [a, aref] = herd::spawn_monitor([me] {
      herd::pid self_a = herd::self();
      // B runs first (spawn is depth-first) and asks to link to A; A does
      // not drain its mailbox until its next blocking point.
      herd::pid b = herd::spawn([self_a] {
        herd::link(self_a);
        serve();
      });
      herd::link(b);
      herd::unlink(b);
      // A round trip to B: A drains B's link request while it waits, and B has
      // acted on A's unlink (sent before the ping) when it answers.
      (void)answers(b);
      herd::link(b);      // now A asks for the link again
      (void)answers(b);   // and B has acted on the link when it answers
      herd::send(me, ready{b});
      serve();
    });
    herd::pid b = herd::receive([](ready x) { return x.who; });
    auto bref = herd::monitor(b);
    herd::send(b, fail{"b fails after A linked to it"});
    b_reason = down_reason(bref);
    a_reason = down_reason(aref, 500ms);
    if (!a_reason) {
      herd::send(a, stop{});
      down_reason(aref);
    }
  });
  CHECK(r.is_normal());
  REQUIRE(b_reason.has_value());
  CHECK(*b_reason == link_err("b fails after A linked to it"));
  REQUIRE(a_reason.has_value());  // A was linked to B: B's failure ends it
  CHECK(*a_reason == link_err("b fails after A linked to it"));
}
