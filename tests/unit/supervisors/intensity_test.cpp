// Restart intensity: more than `intensity` restarts within `period` make a
// supervisor stop its children and exit with `shutdown`; its own supervisor
// decides next. Run in the deterministic mode's virtual time: the 5 s
// periods cost no real time.
#include "sup_fixtures.hpp"

#include <catch2/catch.hpp>

using namespace sup_test;
using herd::test::run_node;

namespace {

// Waits for the exit_msg of `s` (the caller traps exits).
herd::exit_reason exit_of(herd::pid s) {
  return herd::receive(herd::when([s](const herd::exit_msg& e) { return e.from == s; },
                                  [](herd::exit_msg&& e) { return e.reason; }));
}

}  // namespace

TEST_CASE("more restarts than the intensity within the period shut the supervisor down with reason shutdown",
          "[supervisor][intensity]") {
  herd::exit_reason why;
  int restarts_seen = 0;
  bool child_gone = false;
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    herd::trap_exit(true);
    auto s = sup::start_link({.intensity = 2, .period = 5s}, {{.id = "c", .start = worker}});
    herd::pid c = pid_of(*s, "c");
    for (int i = 0; i < 2; ++i) {
      kill_and_wait(c);
      c = wait_restart(*s, "c", c);
      ++restarts_seen;
    }
    kill_and_wait(c);  // the third within the period: too many
    why = exit_of(*s);
    child_gone = herd::current_node_stats().live_processes == 1;
  });
  CHECK(r.is_normal());
  CHECK(restarts_seen == 2);
  CHECK(why.kind() == herd::exit_kind::shutdown);
  CHECK(child_gone);
}

TEST_CASE("intensity 0 means the first crash shuts the supervisor down", "[supervisor][intensity]") {
  herd::exit_reason why;
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    herd::trap_exit(true);
    auto s = sup::start_link({.intensity = 0}, {{.id = "c", .start = worker}});
    herd::send(pid_of(*s, "c"), crash{});
    why = exit_of(*s);
  });
  CHECK(r.is_normal());
  CHECK(why == herd::exit_reason::shutdown());
}

TEST_CASE("restarts further apart than the period never exceed the intensity", "[supervisor][intensity]") {
  int restarts = 0;
  bool alive_at_end = false;
  std::chrono::milliseconds took{};
  auto t_real = herd::test::clk::now();
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    auto s = sup::start_link({.intensity = 1, .period = 5s}, {{.id = "c", .start = worker}});
    auto t0 = virtual_now();
    herd::pid c = pid_of(*s, "c");
    for (int i = 0; i < 10; ++i) {
      herd::sleep(5001ms);
      herd::send(c, crash{});
      c = wait_restart(*s, "c", c);
      ++restarts;
    }
    took = virtual_now() - t0;
    alive_at_end = alive(*s);
    (void)sup::stop(*s);
  });
  double real_ms = herd::test::ms_since(t_real);
  CHECK(r.is_normal());
  CHECK(restarts == 10);
  CHECK(alive_at_end);
  CHECK(took >= 50s);
  CHECK(real_ms < 5000);  // virtual time: 50 s of it cost next to nothing
}

TEST_CASE("crashes closer together than the period add up across restarts", "[supervisor][intensity]") {
  herd::exit_reason why;
  std::chrono::milliseconds at{};
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    herd::trap_exit(true);
    auto s = sup::start_link({.intensity = 1, .period = 5s}, {{.id = "c", .start = worker}});
    auto t0 = virtual_now();
    herd::pid c = pid_of(*s, "c");
    herd::sleep(3000ms);
    herd::send(c, crash{});
    c = wait_restart(*s, "c", c);  // one restart in 5 s: allowed
    herd::sleep(3000ms);
    herd::send(c, crash{});        // two within 5 s (at 3 s and 6 s): too many
    why = exit_of(*s);
    at = virtual_now() - t0;
  });
  CHECK(r.is_normal());
  CHECK(why == herd::exit_reason::shutdown());
  CHECK(at >= 6000ms);
  CHECK(at < 6100ms);
}

TEST_CASE("restart intensity escalates through two levels: the child's supervisor gives up, its parent restarts it, "
          "then gives up too",
          "[supervisor][intensity][nested]") {
  std::atomic<int> worker_starts{0};
  herd::exit_reason why;
  std::chrono::milliseconds at{};
  auto t_real = herd::test::clk::now();
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    herd::trap_exit(true);
    auto failing = [&worker_starts] {
      ++worker_starts;
      herd::sleep(1000ms);
      throw std::runtime_error("fails after a second");
    };
    auto t0 = virtual_now();
    auto top = sup::start_link({.intensity = 1, .period = 5s},
                               {sup::supervisor_spec("mid", {.intensity = 1, .period = 5s}, {{.id = "w", .start = failing}})});
    why = exit_of(*top);
    at = virtual_now() - t0;
  });
  CHECK(r.is_normal());
  // mid #1: w starts at 0 s, fails at 1 s, restarted, fails at 2 s: mid gives up.
  // top restarts mid (1 restart in 5 s); mid #2: w fails at 3 s and 4 s: mid gives up.
  // top: a second restart within 5 s — it gives up too.
  CHECK(worker_starts == 4);
  CHECK(why == herd::exit_reason::shutdown());
  CHECK(at >= 4000ms);
  CHECK(at < 4100ms);
  CHECK(herd::test::ms_since(t_real) < 5000);
}

TEST_CASE("a child that cannot be started again is retried, each retry counting, until the supervisor gives up",
          "[supervisor][intensity]") {
  log_capture logs;
  herd::exit_reason why;
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    herd::trap_exit(true);
    auto s = sup::start_link({.strategy = sup::one_for_all, .intensity = 3},
                             {{.id = "a", .start = worker}, {.id = "b", .start = worker, .registered_name = "b_name"}});
    (void)sup::terminate_child(*s, "b");  // frees its name ...
    herd::pid squatter = herd::spawn({.name = "b_name"}, [] { herd::receive([](finish) {}); });  // ... which is taken
    herd::send(pid_of(*s, "a"), crash{});  // one_for_all: b must start again, and cannot
    why = exit_of(*s);
    herd::send(squatter, finish{});
  });
  CHECK(r.is_normal());
  CHECK(why == herd::exit_reason::shutdown());
  std::string text = logs.text();
  INFO(text);
  CHECK(count_of(text, "child \"b\" failed to start") >= 3);
  CHECK(count_of(text, "restart intensity reached") == 1);
}
