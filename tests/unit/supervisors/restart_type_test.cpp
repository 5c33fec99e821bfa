// Restart types: permanent is always restarted, transient only after an
// abnormal exit, temporary never (and its spec goes).
#include "sup_fixtures.hpp"

#include <catch2/catch.hpp>

using namespace sup_test;
using herd::test::opts;
using herd::test::run_node;

namespace {

// Ends child `id` the way `how` says and waits until the supervisor has seen it.
void end_child(herd::pid s, const std::string& id, int how) {
  herd::pid p = pid_of(s, id);
  herd::monitor_ref m = herd::monitor(p);
  switch (how) {
    case 0: herd::send(p, finish{}); break;                                        // normal
    case 1: herd::send(p, quit{herd::exit_reason::shutdown()}); break;             // shutdown
    case 2: herd::send(p, quit{herd::exit_reason::shutdown("done")}); break;       // {shutdown, done}
    case 3: herd::send(p, crash{}); break;                                         // an error
    case 4: herd::exit(p, herd::exit_reason::kill()); break;                       // killed
    case 5: herd::send(p, quit{herd::exit_reason::error("app_error", "bad")}); break;
  }
  herd::receive(herd::when([m](const herd::down& d) { return d.ref == m; }, [](herd::down&&) {}));
  sup::count_children(s);  // a call: the supervisor has handled the exit before it answers
}

const char* how_name[] = {"normal", "shutdown", "{shutdown, done}", "error", "killed", "error value"};

}  // namespace

TEST_CASE("a permanent child is restarted whatever its exit reason", "[supervisor][restart]") {
  int how = GENERATE(0, 1, 2, 3, 4, 5);
  INFO("exit: " << how_name[how]);
  herd::pid before, after;
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    auto s = sup::start_link({}, {{.id = "p", .start = worker, .restart = sup::permanent}});
    before = pid_of(*s, "p");
    end_child(*s, "p", how);
    after = pid_of(*s, "p");
    (void)sup::stop(*s);
  });
  CHECK(r.is_normal());
  CHECK(after.valid());
  CHECK(after != before);
}

TEST_CASE("a transient child is restarted after an abnormal exit only, and after normal or shutdown its spec stays",
          "[supervisor][restart]") {
  int how = GENERATE(0, 1, 2, 3, 4, 5);
  INFO("exit: " << how_name[how]);
  bool abnormal = how >= 3;
  herd::pid before, after;
  sup::child_counts counts;
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    auto s = sup::start_link({}, {{.id = "t", .start = worker, .restart = sup::transient}});
    before = pid_of(*s, "t");
    end_child(*s, "t", how);
    after = pid_of(*s, "t");
    counts = sup::count_children(*s);
    (void)sup::stop(*s);
  });
  CHECK(r.is_normal());
  CHECK(counts.specs == 1);
  if (abnormal) {
    CHECK(after.valid());
    CHECK(after != before);
    CHECK(counts.active == 1);
  } else {
    CHECK_FALSE(after.valid());
    CHECK(counts.active == 0);
  }
}

TEST_CASE("a temporary child is never restarted and its spec is removed", "[supervisor][restart]") {
  int how = GENERATE(0, 3, 4);
  INFO("exit: " << how_name[how]);
  std::vector<sup::child_info> left;
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    auto s = sup::start_link({}, {{.id = "keep", .start = worker}, {.id = "tmp", .start = worker, .restart = sup::temporary}});
    end_child(*s, "tmp", how);
    left = sup::which_children(*s);
    (void)sup::stop(*s);
  });
  CHECK(r.is_normal());
  REQUIRE(left.size() == 1);
  CHECK(left[0].id == "keep");
}

TEST_CASE("one_for_all does not restart a temporary sibling it stopped, it removes its spec", "[supervisor][restart]") {
  event_log ev;
  std::vector<sup::child_info> after;
  std::vector<std::string> seen;
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    auto s = sup::start_link({.strategy = sup::one_for_all},
                             {{.id = "a", .start = logged(ev, "a")},
                              {.id = "tmp", .start = logged(ev, "tmp"), .restart = sup::temporary},
                              {.id = "b", .start = logged(ev, "b")}});
    ev.take();
    end_child(*s, "a", 4);
    after = sup::which_children(*s);
    seen = ev.take();
    (void)sup::stop(*s);
  });
  CHECK(r.is_normal());
  CHECK(seen == std::vector<std::string>{"stop a", "stop b", "stop tmp", "start a", "start b"});
  REQUIRE(after.size() == 2);
  CHECK(after[0].id == "a");
  CHECK(after[1].id == "b");
}

TEST_CASE("a transient child that ended normally is started again when one_for_all restarts its siblings (as in OTP)",
          "[supervisor][restart]") {
  herd::pid t_after;
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    auto s = sup::start_link({.strategy = sup::one_for_all},
                             {{.id = "a", .start = worker}, {.id = "t", .start = worker, .restart = sup::transient}});
    end_child(*s, "t", 0);
    end_child(*s, "a", 3);
    t_after = pid_of(*s, "t");
    (void)sup::stop(*s);
  });
  CHECK(r.is_normal());
  CHECK(t_after.valid());
}
