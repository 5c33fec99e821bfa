// Monitors, as Erlang's reference manual ("Processes": monitors) states them:
// monitor / demonitor / spawn_monitor, one-way and stackable, `down` carrying
// the exit reason, noproc at once for a dead or unknown pid, and the order of
// messages and the `down` from one process. One test per rule.
// herd-unity: file scope (its checks name its types with their namespaces)
#include <herd/actors.hpp>

#include <catch2/catch.hpp>

#include "support/node_fixture.hpp"
#include "support/scale.hpp"

#include <algorithm>
#include <atomic>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using herd::test::run_node;

namespace monitor_test_msgs {
struct stop {};
struct go {};
struct ping { herd::pid from; };
struct pong {};
struct ready { herd::pid who; };
struct seq { int n; };
struct watching {};
struct mon_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

herd::node_options opts(unsigned workers) { return herd::test::opts(workers); }

void serve() {
  for (bool done = false; !done;)
    herd::receive([&](stop) { done = true; }, [](ping p) { herd::send(p.from, pong{}); });
}

// From a process: the next `down` for ref, or nullopt when none came within limit.
std::optional<herd::down> down_for(herd::monitor_ref ref, std::chrono::milliseconds limit = 5s) {
  return herd::receive(herd::when([ref](const herd::down& d) { return d.ref == ref; },
                                  [](herd::down&& d) { return std::optional<herd::down>(std::move(d)); }),
                       herd::after(limit, [] { return std::optional<herd::down>(); }));
}

bool answers(herd::pid p, std::chrono::milliseconds limit = 2s) {
  herd::send(p, ping{herd::self()});
  return herd::receive([](pong) { return true; }, herd::after(limit, [] { return false; }));
}

}  // namespace monitor_test_msgs

using namespace monitor_test_msgs;

TEST_CASE("a monitor on a dead or unknown pid delivers down{ref, pid, noproc} at once", "[monitor]") {
  unsigned workers = HERD_WORKERS();
  std::optional<herd::down> downs[2];
  herd::monitor_ref refs[2];
  herd::pid targets[2];
  auto r = run_node(opts(workers), [&] {
    auto [dead, dref] = herd::spawn_monitor([] {});
    down_for(dref);
    herd::pid me = herd::self();
    targets[0] = dead;
    targets[1] = herd::pid{me.index, me.generation + 1000};  // a slot in use, another generation
    for (int i = 0; i < 2; ++i) {
      refs[i] = herd::monitor(targets[i]);
      downs[i] = down_for(refs[i], 0ms);  // already there: no waiting
    }
  });
  CHECK(r.is_normal());
  for (int i = 0; i < 2; ++i) {
    INFO((i == 0 ? "a dead pid" : "an unknown pid"));
    CHECK(bool(refs[i]));
    REQUIRE(downs[i].has_value());
    CHECK(downs[i]->ref == refs[i]);
    CHECK(downs[i]->who == targets[i]);
    CHECK(downs[i]->reason.kind() == herd::exit_kind::noproc);
  }
}

TEST_CASE("spawn_monitor monitors the child before it runs: a child that ends at once reports its own reason",
          "[monitor]") {
  unsigned workers = HERD_WORKERS();
  std::optional<herd::down> d1, d2;
  herd::pid p1, p2;
  auto r = run_node(opts(workers), [&] {
    auto [a, ra] = herd::spawn_monitor([] { throw mon_error("at once"); });
    auto [b, rb] = herd::spawn_monitor([] {});
    p1 = a;
    p2 = b;
    d1 = down_for(ra);
    d2 = down_for(rb);
  });
  CHECK(r.is_normal());
  REQUIRE(d1.has_value());
  CHECK(d1->who == p1);
  CHECK(d1->reason == herd::exit_reason::error("monitor_test_msgs::mon_error", "at once"));
  REQUIRE(d2.has_value());
  CHECK(d2->who == p2);
  CHECK(d2->reason.is_normal());
}

TEST_CASE("a monitor is one-way: the watcher's death does not affect the process it watches", "[monitor]") {
  unsigned workers = HERD_WORKERS();
  std::atomic<int> exit_msgs{0};
  bool answered[2] = {false, false};
  std::optional<herd::down> watcher_down[2], target_down[2];
  auto r = run_node(opts(workers), [&] {
    herd::pid me = herd::self();
    for (int trapping = 0; trapping < 2; ++trapping) {
      auto [t, tref] = herd::spawn_monitor([&, trapping] {
        if (trapping) herd::trap_exit(true);
        for (bool done = false; !done;)
          herd::receive([&](stop) { done = true; }, [](ping p) { herd::send(p.from, pong{}); },
                        [&](herd::exit_msg) { ++exit_msgs; });
      });
      auto [w, wref] = herd::spawn_monitor([me, t] {
        herd::monitor(t);
        herd::send(me, watching{});
        herd::receive([](go) {});
        throw mon_error("the watcher fails");
      });
      herd::receive([](watching) {});
      const std::size_t exited_before = herd::current_node_stats().exited;
      herd::send(w, go{});
      watcher_down[trapping] = down_for(wref);
      // Everything the watcher sends as it dies is sent once the node counts
      // it as exited (only it ends meanwhile); our ping comes after.
      herd::test::eventually([&] { return herd::current_node_stats().exited > exited_before; }, 60s);
      answered[trapping] = answers(t);
      herd::send(t, stop{});
      target_down[trapping] = down_for(tref);
    }
  });
  CHECK(r.is_normal());
  for (int t = 0; t < 2; ++t) {
    INFO((t ? "the target traps exits" : "the target does not trap exits"));
    REQUIRE(watcher_down[t].has_value());
    CHECK(watcher_down[t]->reason == herd::exit_reason::error("monitor_test_msgs::mon_error", "the watcher fails"));
    CHECK(answered[t]);
    REQUIRE(target_down[t].has_value());
    CHECK(target_down[t]->reason.is_normal());
  }
  CHECK(exit_msgs == 0);
}

TEST_CASE("monitors stack: two monitors of one process give two downs with different refs", "[monitor]") {
  unsigned workers = HERD_WORKERS();
  herd::monitor_ref r1, r2;
  std::vector<herd::down> downs;
  bool third = true;
  herd::pid target;
  auto r = run_node(opts(workers), [&] {
    auto t = herd::spawn([] { serve(); });
    target = t;
    r1 = herd::monitor(t);
    r2 = herd::monitor(t);
    herd::exit(t, herd::exit_reason::shutdown("twice"));
    for (int i = 0; i < 2; ++i)
      herd::receive([&](herd::down d) { downs.push_back(std::move(d)); }, herd::after(5s));
    third = herd::receive([](herd::down) { return true; }, herd::after(50ms, [] { return false; }));
  });
  CHECK(r.is_normal());
  CHECK(r1 != r2);
  REQUIRE(downs.size() == 2);
  CHECK(downs[0].ref != downs[1].ref);
  for (auto& d : downs) {
    CHECK((d.ref == r1 || d.ref == r2));
    CHECK(d.who == target);
    CHECK(d.reason == herd::exit_reason::shutdown("twice"));
  }
  CHECK_FALSE(third);
}

TEST_CASE("after demonitor no down for that ref is received, even when the target dies right after", "[monitor]") {
  unsigned workers = HERD_WORKERS();
  bool active_before = false, active_after = true, in_flight_active = false;
  bool kept_down = false, stray = true, stray_in_flight = true;
  std::size_t left = 99;
  auto r = run_node(opts(workers), [&] {
    // Demonitor, then the target dies: the other monitor's down shows the
    // death was announced; the demonitored ref's never comes.
    auto t = herd::spawn([] { serve(); });
    auto gone = herd::monitor(t);
    auto kept = herd::monitor(t);
    active_before = herd::demonitor(gone);
    active_after = herd::demonitor(gone);  // a second time: no longer active
    herd::exit(t, herd::exit_reason::kill());
    kept_down = down_for(kept).has_value();
    stray = down_for(gone, 50ms).has_value();

    // The target died before demonitor: its down is already on its way (a
    // spawn_monitor'ed child that fails before its first blocking point).
    auto [c, cref] = herd::spawn_monitor([] { throw mon_error("already dead"); });
    in_flight_active = herd::demonitor(cref);
    stray_in_flight = down_for(cref, 50ms).has_value();
    left = herd::mailbox_size();
  });
  CHECK(r.is_normal());
  CHECK(active_before);
  CHECK_FALSE(active_after);
  CHECK(kept_down);
  CHECK_FALSE(stray);
  CHECK(in_flight_active);
  CHECK_FALSE(stray_in_flight);
  CHECK(left == 0);
}

// BUG: links.hpp promises "After demonitor, no `down` for that ref is ever
// received (one already queued is dropped when it is reached)". That holds
// while the down is still in the incoming queue, but not once a receive has
// moved it into the save queue (it skipped it, looking for something else):
// the drain already turned it into a plain message and dropped the monitor,
// so demonitor returns false and the down is received afterwards.
TEST_CASE("demonitor drops a down that a receive already skipped over", "[monitor]") {
  unsigned workers = HERD_WORKERS();
  INFO("workers: " << workers);
  bool other_down = false, stray = true;
  std::size_t left = 99;
  auto r = run_node(opts(workers), [&] {
    auto t = herd::spawn([] { serve(); });
    auto gone = herd::monitor(t);
    auto kept = herd::monitor(t);
    herd::exit(t, herd::exit_reason::kill());
    // Waits for the second down; the first one is skipped and stays queued.
    other_down = down_for(kept).has_value();
    herd::demonitor(gone);
    stray = down_for(gone, 50ms).has_value();
    left = herd::mailbox_size();
  });
  CHECK(r.is_normal());
  CHECK(other_down);
  CHECK_FALSE(stray);
  CHECK(left == 0);
}

// demonitor skips its scan of the mailbox while no `down` or call reply is
// filed (a count the receives keep): the count must follow every way such a
// message comes and goes — a call's reply received, a down received, a down
// dropped by demonitor — or a filed down would survive its demonitor. The
// downs for a dead pid are signals to ourselves, so their order is known.
TEST_CASE("demonitor drops a skipped-over down after other downs and call replies came and went", "[monitor]") {
  unsigned workers = HERD_WORKERS();
  INFO("workers: " << workers);
  int replies = 0, received = 0, strays = 0;
  std::size_t left = 99;
  auto r = run_node(opts(workers), [&] {
    auto srv = herd::spawn([] {
      for (bool done = false; !done;)
        herd::receive([](herd::call_request<int>&& c) { herd::reply(c.from, c.req); }, [&](stop) { done = true; });
    });
    auto dead = herd::spawn([] {});
    received += down_for(herd::monitor(dead)).has_value();
    for (int round = 0; round < 3; ++round) {
      replies += herd::call<int>(srv, 1);
      auto skipped = herd::monitor(dead);
      auto taken = herd::monitor(dead);
      received += down_for(taken).has_value();  // passes over skipped's down, which stays filed
      herd::demonitor(skipped);
      strays += down_for(skipped, 20ms).has_value();
    }
    herd::send(srv, stop{});
    left = herd::mailbox_size();
  });
  CHECK(r.is_normal());
  CHECK(replies == 3);
  CHECK(received == 4);
  CHECK(strays == 0);
  CHECK(left == 0);
}

TEST_CASE("down carries the exit reason: normal, shutdown, an error's type and what(), killed", "[monitor]") {
  unsigned workers = HERD_WORKERS();
  std::optional<herd::down> downs[4];
  herd::pid pids[4];
  auto r = run_node(opts(workers), [&] {
    auto waiting = [] { herd::receive([](go) {}); };
    auto [a, ra] = herd::spawn_monitor([] { herd::receive([](go) {}); });
    auto [b, rb] = herd::spawn_monitor([] {
      herd::receive([](go) {});
      herd::exit(herd::exit_reason::shutdown("detail"));
    });
    auto [c, rc] = herd::spawn_monitor([] {
      herd::receive([](go) {});
      throw mon_error("what it said");
    });
    auto [d, rd] = herd::spawn_monitor(waiting);
    pids[0] = a;
    pids[1] = b;
    pids[2] = c;
    pids[3] = d;
    herd::send(a, go{});
    herd::send(b, go{});
    herd::send(c, go{});
    herd::exit(d, herd::exit_reason::kill());
    herd::monitor_ref refs[4] = {ra, rb, rc, rd};
    for (int i = 0; i < 4; ++i) downs[i] = down_for(refs[i]);
  });
  CHECK(r.is_normal());
  for (int i = 0; i < 4; ++i) {
    REQUIRE(downs[i].has_value());
    CHECK(downs[i]->who == pids[i]);
  }
  CHECK(downs[0]->reason.is_normal());
  CHECK(downs[1]->reason == herd::exit_reason::shutdown("detail"));
  CHECK(downs[2]->reason.kind() == herd::exit_kind::error);
  CHECK(downs[2]->reason.type() == "monitor_test_msgs::mon_error");
  CHECK(downs[2]->reason.what() == "what it said");
  CHECK(downs[3]->reason.kind() == herd::exit_kind::killed);
}

TEST_CASE("messages a process sent before it ended reach its watcher before the down", "[monitor]") {
  unsigned workers = HERD_WORKERS();
  const int n = 1000;
  std::vector<int> order;  // message numbers, -1 for the down
  bool reason_ok = false;
  auto r = run_node(opts(workers), [&] {
    herd::pid me = herd::self();
    auto [s, ref] = herd::spawn_monitor([me, n] {
      for (int i = 0; i < n; ++i) herd::send(me, seq{i});
      throw mon_error("after the messages");
    });
    for (bool done = false; !done;) {
      herd::receive([&](seq x) { order.push_back(x.n); },
                    [&, ref = ref](herd::down d) {
                      order.push_back(-1);
                      reason_ok = d.ref == ref &&
                                  d.reason == herd::exit_reason::error("monitor_test_msgs::mon_error", "after the messages");
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
  CHECK(reason_ok);
}

// BUG: a process that ends does not take its monitors back from the processes
// it watched (Erlang's exiting process sends a demonitor for each), so a
// long-lived target keeps one entry per dead watcher for good (which a
// server's reply, looking its caller's monitor up by a linear scan over its
// watchers, pays for). Checked in the target's relations, not in its speed.
TEST_CASE("a watcher's death removes its monitor from the target: the target's relations do not grow",
          "[monitor]") {
  unsigned workers = 2;
  const int dead_watchers = int(herd::test::scaled(100'000, 20'000));
  std::optional<herd::introspect::relations> rel;
  auto r = run_node(opts(workers), [&] {
    herd::pid server = herd::spawn([] {
      for (bool done = false; !done;)
        herd::receive([](herd::call_request<int>&& c) { herd::reply(c.from, c.req); }, [&](stop) { done = true; });
    });
    for (int i = 0; i < dead_watchers; ++i) {
      herd::spawn([server] { herd::monitor(server); });  // monitors, then ends at once
      if (i % 1000 == 999) herd::test::wait_live(2, 5000ms);
    }
    herd::test::wait_live(2, 5000ms);
    herd::call<int>(server, 0);  // queued behind every (earlier) monitor request
    // Asked from the blocking pool (a plain thread); the server answers at its next receive.
    rel = herd::blocking([server] { return herd::introspect::ask_relations(server, std::chrono::seconds(60)); });
    herd::send(server, stop{});
  });
  CHECK(r.is_normal());
  REQUIRE(rel.has_value());
  CHECK(rel->answered);
  INFO(rel->monitored_by.size() << " watchers left on the target after " << dead_watchers << " died");
  CHECK(rel->monitored_by.empty());
}

TEST_CASE("the observer's figure for a process's relations grows and shrinks with its monitors", "[monitor]") {
  // The owner republishes it as its tables change (relations::publish), not
  // before each wait, and the observer's scan reads it from another thread.
  uint64_t none = 0, grown = 0, shrunk = 0;
  auto r = run_node(opts(1), [&] {
    herd::pid server = herd::spawn([] { serve(); });
    herd::pid me = herd::self();
    auto seen = [&] {
      // From the blocking pool, as the observer's scan is a plain thread.
      return herd::blocking([me] { return herd::introspect::process_info(me)->relations_bytes; });
    };
    none = seen();
    std::vector<herd::monitor_ref> refs;
    for (int i = 0; i < 200; ++i) refs.push_back(herd::monitor(server));
    grown = seen();
    for (auto& ref : refs) herd::demonitor(ref);
    shrunk = seen();
    herd::send(server, stop{});
  });
  CHECK(r.is_normal());
  INFO("no relations " << none << " B, 200 monitors " << grown << " B, after demonitor " << shrunk << " B");
  CHECK(none == 0);
  CHECK(grown >= 200 * 16);  // 200 entries of at least a key and a pid
  CHECK(shrunk < grown);
  CHECK(shrunk > 0);  // the block stays until the process ends
}
