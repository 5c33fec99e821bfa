// The supervisor API: start_link, start_child, terminate_child,
// restart_child, delete_child, which_children, count_children, and their
// OTP-style results.
#include "sup_fixtures.hpp"

#include <herd/supervisors/introspect.hpp>

#include <catch2/catch.hpp>

using namespace sup_test;
using herd::test::opts;
using herd::test::run_node;

TEST_CASE("which_children lists id, pid and type in start order, and count_children counts specs, active, supervisors "
          "and workers",
          "[supervisor][api]") {
  std::vector<sup::child_info> kids;
  sup::child_counts n;
  std::vector<sup::child_info> nested;
  auto r = run_node(opts(2), [&] {
    auto s = sup::start_link({}, {{.id = "a", .start = worker},
                                  sup::supervisor_spec("sub", {}, {{.id = "x", .start = worker}}),
                                  {.id = "t", .start = worker, .restart = sup::transient}});
    herd::send(pid_of(*s, "t"), finish{});  // a transient child that ended normally: spec kept, not running
    herd::test::eventually([&] { return !pid_of(*s, "t").valid(); });
    kids = sup::which_children(*s);
    n = sup::count_children(*s);
    nested = sup::which_children(kids[1].pid);
    (void)sup::stop(*s);
  });
  CHECK(r.is_normal());
  REQUIRE(kids.size() == 3);
  CHECK(kids[0].id == "a");
  CHECK(kids[0].type == sup::child_type::worker);
  CHECK(kids[0].pid.valid());
  CHECK(kids[1].id == "sub");
  CHECK(kids[1].type == sup::child_type::supervisor);
  CHECK(kids[2].id == "t");
  CHECK_FALSE(kids[2].pid.valid());
  CHECK(n.specs == 3);
  CHECK(n.active == 2);
  CHECK(n.supervisors == 1);
  CHECK(n.workers == 2);
  REQUIRE(nested.size() == 1);
  CHECK(nested[0].id == "x");
}

TEST_CASE("start_child adds a child at the end, and a duplicate id is refused as already_started or already_present",
          "[supervisor][api]") {
  herd::pid added;
  sup::result<herd::pid> dup_running{herd::no_pid}, dup_stopped{herd::no_pid};
  std::vector<std::string> ids;
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    auto s = sup::start_link({}, {{.id = "a", .start = worker}});
    added = *sup::start_child(*s, {.id = "b", .start = worker});
    dup_running = sup::start_child(*s, {.id = "b", .start = worker});
    (void)sup::terminate_child(*s, "b");
    dup_stopped = sup::start_child(*s, {.id = "b", .start = worker});
    for (auto& c : sup::which_children(*s)) ids.push_back(c.id);
    (void)sup::stop(*s);
  });
  CHECK(r.is_normal());
  CHECK(added.valid());
  REQUIRE_FALSE(dup_running.ok());
  CHECK(dup_running.code() == sup::errc::already_started);
  CHECK(dup_running.error().child == added);
  REQUIRE_FALSE(dup_stopped.ok());
  CHECK(dup_stopped.code() == sup::errc::already_present);
  CHECK(ids == std::vector<std::string>{"a", "b"});
}

TEST_CASE("terminate_child keeps the spec, restart_child starts it again, delete_child removes it",
          "[supervisor][api]") {
  std::vector<sup::errc> errs;
  bool terminated = false, deleted = false, restarted_alive = false, old_dead = false;
  std::size_t after_delete = 9;
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    auto s = sup::start_link({}, {{.id = "a", .start = worker}, {.id = "b", .start = worker}});
    herd::pid b = pid_of(*s, "b");
    errs.push_back(sup::restart_child(*s, "b").code());   // running
    errs.push_back(sup::delete_child(*s, "b").code());    // running
    terminated = sup::terminate_child(*s, "b").ok();
    old_dead = !alive(b);
    terminated = terminated && sup::terminate_child(*s, "b").ok();  // not running: ok again
    auto nb = sup::restart_child(*s, "b");
    restarted_alive = nb.ok() && alive(*nb);
    (void)sup::terminate_child(*s, "b");
    deleted = sup::delete_child(*s, "b").ok();
    after_delete = sup::which_children(*s).size();
    errs.push_back(sup::delete_child(*s, "b").code());     // gone
    errs.push_back(sup::restart_child(*s, "b").code());
    errs.push_back(sup::terminate_child(*s, "nope").code());
    (void)sup::stop(*s);
  });
  CHECK(r.is_normal());
  CHECK(terminated);
  CHECK(old_dead);
  CHECK(restarted_alive);
  CHECK(deleted);
  CHECK(after_delete == 1);
  CHECK(errs == std::vector<sup::errc>{sup::errc::running, sup::errc::running, sup::errc::not_found,
                                       sup::errc::not_found, sup::errc::not_found});
}

TEST_CASE("terminate_child of a temporary child removes its spec", "[supervisor][api]") {
  std::size_t left = 9;
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    auto s = sup::start_link({}, {{.id = "t", .start = worker, .restart = sup::temporary}});
    (void)sup::terminate_child(*s, "t");
    left = sup::count_children(*s).specs;
    (void)sup::stop(*s);
  });
  CHECK(r.is_normal());
  CHECK(left == 0);
}

TEST_CASE("start_link returns start_failed when a child cannot start, after stopping those already started",
          "[supervisor][api]") {
  event_log ev;
  sup::result<herd::pid> res{herd::no_pid};
  bool caller_alive = false;
  std::size_t live_after = 0;
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    herd::pid holder = herd::spawn({.name = "taken"}, [] { herd::receive([](finish) {}); });
    res = sup::start_link({}, {{.id = "a", .start = logged(ev, "a")},
                               {.id = "b", .start = worker, .registered_name = "taken"},
                               {.id = "c", .start = logged(ev, "c")}});
    caller_alive = true;  // not taken down with the supervisor
    herd::send(holder, finish{});
    herd::test::wait_live(1);
    live_after = herd::current_node_stats().live_processes;
  });
  CHECK(r.is_normal());
  CHECK(caller_alive);
  REQUIRE_FALSE(res.ok());
  CHECK(res.code() == sup::errc::start_failed);
  CHECK(res.error().detail.find("\"b\"") != std::string::npos);
  CHECK(ev.all() == std::vector<std::string>{"start a", "stop a"});
  CHECK(live_after == 1);
}

TEST_CASE("start_link refuses invalid specs and a taken supervisor name", "[supervisor][api]") {
  std::vector<sup::errc> codes;
  herd::pid holder_seen;
  herd::pid holder;
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    codes.push_back(sup::start_link({}, {{.id = "a", .start = worker}, {.id = "a", .start = worker}}).code());
    codes.push_back(sup::start_link({}, {{.id = "", .start = worker}}).code());
    codes.push_back(sup::start_link({}, {{.id = "a"}}).code());
    codes.push_back(sup::start_link({}, {{.id = "a", .start = [](int) {}}}).code());
    codes.push_back(sup::start_link({.strategy = sup::simple_one_for_one}, {}).code());
    holder = herd::spawn({.name = "the_sup"}, [] { herd::receive([](finish) {}); });
    auto t = sup::start_link({.name = "the_sup"}, {});
    codes.push_back(t.code());
    holder_seen = t.error().child;
    herd::send(holder, finish{});
  });
  CHECK(r.is_normal());
  CHECK(codes == std::vector<sup::errc>{sup::errc::invalid_spec, sup::errc::invalid_spec, sup::errc::invalid_spec,
                                        sup::errc::invalid_spec, sup::errc::invalid_spec, sup::errc::already_started});
  CHECK(holder_seen == holder);
}

TEST_CASE("a registered supervisor and child can be reached by name", "[supervisor][api]") {
  bool found_sup = false, found_child = false;
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    auto s = sup::start_link({.name = "named_sup"}, {{.id = "a", .start = worker, .registered_name = "named_a"}});
    found_sup = herd::whereis("named_sup") == *s;
    found_child = herd::whereis("named_a") == pid_of(*s, "a");
    (void)sup::stop(*s);
  });
  CHECK(r.is_normal());
  CHECK(found_sup);
  CHECK(found_child);
}

TEST_CASE("calls to a supervisor that is gone throw call_error noproc", "[supervisor][api]") {
  bool threw = false;
  std::optional<herd::exit_reason> stop_again;
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    auto s = sup::start_link({}, {});
    (void)sup::stop(*s);
    try {
      (void)sup::which_children(*s);
    } catch (const herd::call_error& e) {
      threw = e.kind() == herd::call_error::noproc;
    }
    if (auto again = sup::stop(*s)) stop_again = *again;
  });
  CHECK(r.is_normal());
  CHECK(threw);
  REQUIRE(stop_again);
  CHECK(stop_again->kind() == herd::exit_kind::noproc);
}

TEST_CASE("stop returns errc timeout as a value while a child holds the supervisor up, and the exit reason once it "
          "has ended",
          "[supervisor][api]") {
  std::optional<sup::errc> late;
  std::string message;
  std::optional<herd::exit_reason> ended;
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    auto s = sup::start_link({}, {{.id = "stuck", .start = stubborn, .shutdown = herd::infinity}});
    herd::pid stuck = pid_of(*s, "stuck");
    auto first = sup::stop(*s, herd::exit_reason::shutdown(), 30ms);
    if (!first) {
      late = first.code();
      message = first.error().message();
    }
    herd::exit(stuck, herd::exit_reason::kill());  // lets the supervisor finish stopping
    if (auto again = sup::stop(*s)) ended = *again;
  });
  CHECK(r.is_normal());
  REQUIRE(late);
  CHECK(*late == sup::errc::timeout);
  CHECK(message.rfind("timeout: stop <", 0) == 0);
  REQUIRE(ended);
  CHECK(ended->kind() == herd::exit_kind::shutdown);
}

TEST_CASE("children_of lists a supervisor's children, and a supervisor that is gone is errc not_found as a value",
          "[supervisor][api]") {
  std::size_t listed = 0, more = 0;
  std::optional<sup::errc> gone;
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    auto s = sup::start_link({}, {{.id = "a", .start = worker}, {.id = "b", .start = worker}});
    if (auto c = sup::children_of(*s, 1, 5s)) {
      listed = c->children.size();
      more = c->more;
    }
    (void)sup::stop(*s);
    if (auto after = sup::children_of(*s, 1, 5s); !after) gone = after.code();
  });
  CHECK(r.is_normal());
  CHECK(listed == 1);
  CHECK(more == 1);
  REQUIRE(gone);
  CHECK(*gone == sup::errc::not_found);
}

TEST_CASE("exit(sup, shutdown) from any process stops a supervisor, but a normal exit signal from a stranger does not",
          "[supervisor][api]") {
  bool alive_after_normal = false;
  herd::exit_reason why;
  auto r = run_node(opts(2), [&] {
    auto s = sup::start_link({}, {{.id = "a", .start = worker}});
    herd::unlink(*s);
    herd::pid stranger = herd::spawn([s = *s] {
      herd::exit(s, herd::exit_reason::normal());
      herd::receive([](finish) {});
      herd::exit(s, herd::exit_reason::shutdown("from a stranger"));
    });
    herd::monitor_ref m = herd::monitor(*s);
    (void)sup::count_children(*s);
    alive_after_normal = alive(*s);
    herd::send(stranger, finish{});
    herd::receive(herd::when([m](const herd::down& d) { return d.ref == m; }, [&](herd::down&& d) { why = d.reason; }));
  });
  CHECK(r.is_normal());
  CHECK(alive_after_normal);
  CHECK(why == herd::exit_reason::shutdown("from a stranger"));
}
