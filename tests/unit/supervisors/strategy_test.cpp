// The restart strategies: who is restarted with a child that ended, and in
// which order children start and stop.
#include "sup_fixtures.hpp"

#include <algorithm>

#include <catch2/catch.hpp>

using namespace sup_test;
using herd::test::opts;
using herd::test::run_node;

TEST_CASE("a crashing child under one_for_one is restarted and its siblings keep their pids", "[supervisor][strategy]") {
  unsigned workers = HERD_WORKERS();
  std::vector<sup::child_info> before, after;
  auto r = run_node(opts(workers), [&] {
    auto s = sup::start_link({.strategy = sup::one_for_one},
                             {{.id = "a", .start = worker}, {.id = "b", .start = worker}, {.id = "c", .start = worker}});
    before = sup::which_children(*s);
    herd::send(before[1].pid, crash{});
    wait_restart(*s, "b", before[1].pid);
    after = sup::which_children(*s);
    (void)sup::stop(*s);
  });
  CHECK(r.is_normal());
  REQUIRE(after.size() == 3);
  CHECK(after[0].pid == before[0].pid);
  CHECK(after[1].pid != before[1].pid);
  CHECK(after[1].pid.valid());
  CHECK(after[2].pid == before[2].pid);
}

TEST_CASE("children start in order and stop in reverse order", "[supervisor][strategy]") {
  event_log ev;
  std::vector<std::string> started, stopped;
  // One worker: a child logs its start when it first runs (supervisor_order).
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    auto s = sup::start_link({}, {{.id = "a", .start = logged(ev, "a")},
                                  {.id = "b", .start = logged(ev, "b")},
                                  {.id = "c", .start = logged(ev, "c")}});
    wait_events(ev, 3);
    started = ev.take();
    (void)sup::stop(*s);
    stopped = ev.take();
  });
  CHECK(r.is_normal());
  CHECK(started == std::vector<std::string>{"start a", "start b", "start c"});
  CHECK(stopped == std::vector<std::string>{"stop c", "stop b", "stop a"});
}

TEST_CASE("a killed child under one_for_all stops the others in reverse order and restarts all in start order",
          "[supervisor][strategy]") {
  unsigned workers = HERD_WORKERS();
  event_log ev;
  std::vector<std::string> seen;
  std::vector<sup::child_info> before, after;
  auto r = run_node(opts(workers), [&] {
    auto s = sup::start_link({.strategy = sup::one_for_all}, {{.id = "a", .start = logged(ev, "a")},
                                                              {.id = "b", .start = logged(ev, "b")},
                                                              {.id = "c", .start = logged(ev, "c")}});
    before = sup::which_children(*s);
    wait_events(ev, 3);
    ev.take();
    kill_and_wait(before[1].pid);
    wait_restart(*s, "c", before[2].pid);
    after = sup::which_children(*s);
    wait_events(ev, 6);
    seen = ev.take();
    (void)sup::stop(*s);
  });
  CHECK(r.is_normal());
  CHECK(supervisor_order(seen, 3, workers) ==
        std::vector<std::string>{"stop b", "stop c", "stop a", "start a", "start b", "start c"});
  REQUIRE(after.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(after[i].pid.valid());
    CHECK(after[i].pid != before[i].pid);
  }
}

TEST_CASE("a killed child under rest_for_one restarts itself and the children started after it, in order",
          "[supervisor][strategy]") {
  unsigned workers = HERD_WORKERS();
  event_log ev;
  std::vector<std::string> seen;
  std::vector<sup::child_info> before, after;
  auto r = run_node(opts(workers), [&] {
    auto s = sup::start_link({.strategy = sup::rest_for_one}, {{.id = "a", .start = logged(ev, "a")},
                                                               {.id = "b", .start = logged(ev, "b")},
                                                               {.id = "c", .start = logged(ev, "c")},
                                                               {.id = "d", .start = logged(ev, "d")}});
    before = sup::which_children(*s);
    wait_events(ev, 4);
    ev.take();
    kill_and_wait(before[1].pid);
    wait_restart(*s, "d", before[3].pid);
    after = sup::which_children(*s);
    wait_events(ev, 6);
    seen = ev.take();
    (void)sup::stop(*s);
  });
  CHECK(r.is_normal());
  CHECK(supervisor_order(seen, 3, workers) ==
        std::vector<std::string>{"stop b", "stop d", "stop c", "start b", "start c", "start d"});
  REQUIRE(after.size() == 4);
  CHECK(after[0].pid == before[0].pid);  // started before b: untouched
  for (int i = 1; i < 4; ++i) CHECK(after[i].pid != before[i].pid);
}

TEST_CASE("a nested tree stops depth first in reverse start order", "[supervisor][strategy][nested]") {
  event_log ev;
  std::vector<std::string> stopped;
  auto r = run_node(opts(2), [&] {
    auto s = sup::start_link(
        {}, {{.id = "w1", .start = logged(ev, "w1")},
             sup::supervisor_spec("sub1", {}, {{.id = "x1", .start = logged(ev, "x1")}, {.id = "x2", .start = logged(ev, "x2")}}),
             {.id = "w2", .start = logged(ev, "w2")},
             sup::supervisor_spec("sub2", {.strategy = sup::rest_for_one},
                                  {{.id = "y1", .start = logged(ev, "y1")}, {.id = "y2", .start = logged(ev, "y2")}})});
    wait_events(ev, 6);
    ev.take();
    (void)sup::stop(*s);
    stopped = ev.take();
  });
  CHECK(r.is_normal());
  CHECK(stopped == std::vector<std::string>{"stop y2", "stop y1", "stop w2", "stop x2", "stop x1", "stop w1"});
}

TEST_CASE("a supervisor child that is killed is restarted with fresh children of its own", "[supervisor][strategy][nested]") {
  herd::pid old_sub, new_sub, old_x, new_x;
  auto r = run_node(opts(2), [&] {
    auto s = sup::start_link({}, {sup::supervisor_spec("sub", {}, {{.id = "x", .start = worker}})});
    old_sub = pid_of(*s, "sub");
    old_x = pid_of(old_sub, "x");
    kill_and_wait(old_sub);
    new_sub = wait_restart(*s, "sub", old_sub);
    new_x = pid_of(new_sub, "x");
    herd::test::eventually([&] { return !alive(old_x); });
    (void)sup::stop(*s);
  });
  CHECK(r.is_normal());
  CHECK(new_sub.valid());
  CHECK(new_sub != old_sub);
  CHECK(new_x.valid());
  CHECK(new_x != old_x);
}

TEST_CASE("a supervisor stops, children first, when its parent exits", "[supervisor][strategy][nested]") {
  event_log ev;
  herd::pid s;
  bool gone = false;
  auto r = run_node(opts(2), [&] {
    herd::pid me = herd::self();
    herd::pid parent = herd::spawn([&, me] {
      auto sp = sup::start_link({}, {{.id = "a", .start = logged(ev, "a")}, {.id = "b", .start = logged(ev, "b")}});
      herd::send(me, *sp);
      herd::receive([](finish) {});  // then returns: a normal exit
    });
    s = herd::receive([](herd::pid p) { return p; });
    herd::monitor_ref m = herd::monitor(s);
    wait_events(ev, 2);  // both children ran, so both log their stop
    herd::send(parent, finish{});
    herd::receive(herd::when([m](const herd::down& d) { return d.ref == m; }, [&](herd::down&& d) { gone = d.reason.is_normal(); }));
  });
  CHECK(r.is_normal());
  CHECK(gone);  // it exits with its parent's reason
  // Each child logs its start when it first runs, which may be after the
  // next one was spawned (wait_events); the stops are the supervisor's order.
  std::vector<std::string> log = ev.all();
  REQUIRE(log.size() == 4);
  std::sort(log.begin(), log.begin() + 2);
  CHECK(log == std::vector<std::string>{"start a", "start b", "stop b", "stop a"});
}

TEST_CASE("start_link returns once the whole nested tree has started", "[supervisor][strategy][nested]") {
  unsigned workers = HERD_WORKERS();
  event_log ev;
  std::size_t started_when_returned = 0;
  auto r = run_node(opts(workers), [&] {
    std::vector<sup::child_spec> mids;
    for (int m = 0; m < 4; ++m) {
      std::vector<sup::child_spec> leaves;
      for (int l = 0; l < 4; ++l) {
        std::vector<sup::child_spec> ws;
        for (int w = 0; w < 4; ++w) {
          std::string id = std::to_string(m) + "." + std::to_string(l) + "." + std::to_string(w);
          ws.push_back({.id = id, .start = logged(ev, id)});
        }
        leaves.push_back(sup::supervisor_spec("leaf" + std::to_string(l), {}, std::move(ws)));
      }
      mids.push_back(sup::supervisor_spec("mid" + std::to_string(m), {}, std::move(leaves)));
    }
    auto s = sup::start_link({}, std::move(mids));
    // Started: every leaf worker has its pid in its supervisor (as in OTP, a
    // worker started by a plain spawn may not have run its first line yet,
    // so its "start" event is no measure).
    for (const auto& mid : sup::which_children(*s))
      for (const auto& leaf : sup::which_children(mid.pid))
        for (const auto& w : sup::which_children(leaf.pid)) started_when_returned += w.pid != herd::no_pid;
    (void)sup::stop(*s);
  });
  CHECK(r.is_normal());
  CHECK(started_when_returned == 64);
}

TEST_CASE("a nested supervisor that cannot start its children makes start_link fail", "[supervisor][strategy][nested]") {
  sup::result<herd::pid> res{herd::no_pid};
  auto r = run_node(opts(2), [&] {
    herd::pid holder = herd::spawn({.name = "busy_name"}, [] { herd::receive([](finish) {}); });
    res = sup::start_link({}, {{.id = "a", .start = worker},
                               sup::supervisor_spec("sub", {}, {{.id = "x", .start = worker, .registered_name = "busy_name"}})});
    herd::send(holder, finish{});
    herd::test::wait_live(1);
  });
  CHECK(r.is_normal());
  REQUIRE_FALSE(res.ok());
  CHECK(res.code() == sup::errc::start_failed);
  CHECK(res.error().detail.find("\"sub\"") != std::string::npos);
}
