// How a process dies in C++ (docs/design.md: "Traps of stackful code", its
// last point): an exit signal is acted on at the next blocking point, unwinds
// the whole stack, and cannot be swallowed; destructors that send or call
// while unwinding; a process killed while hibernated.
#include "links_fixture.hpp"

using namespace std::chrono_literals;
using herd::test::dtor_probe;
using herd::test::run_node;
using namespace links_test_msgs;

// ---------------------------------------------------------------------------
// Rule 4: dying in C++
// ---------------------------------------------------------------------------

TEST_CASE("an exit signal is acted on at the next blocking point (receive, sleep, yield, blocking), never at send",
          "[links]") {
  unsigned workers = HERD_WORKERS();
  int kind = GENERATE(0, 1, 2, 3);
  const char* names[] = {"receive", "sleep", "yield", "blocking() return"};
  INFO("blocking point: " << names[kind]);
  const int n = 3000;  // past the reduction budget: a send may preempt, never unwind
  int got = 0;
  std::atomic<bool> sent_all{false}, after_block{false};
  std::atomic<int> dtors{0};
  std::optional<herd::exit_reason> reason;
  auto r = run_node(opts(workers), [&] {
    herd::pid me = herd::self();
    auto [t, ref] = herd::spawn_monitor([&, me, kind] {
      dtor_probe probe(dtors);
      herd::pid mine = herd::self();
      std::atomic<bool> signalled{false};
      // Another thread sends the exit signal while this process runs without
      // reaching a blocking point.
      std::thread killer([&] {
        herd::exit(mine, herd::exit_reason::shutdown("signal"));
        signalled = true;
      });
      while (!signalled.load()) std::this_thread::yield();
      killer.join();
      for (int i = 0; i < n; ++i) herd::send(me, seq{i});
      sent_all = true;
      switch (kind) {
        case 0: herd::receive([](stop) {}); break;
        case 1: herd::sleep(1h); break;  // the blocking point under test
        case 2: herd::yield(); break;
        default: herd::blocking([] {}); break;
      }
      after_block = true;
    });
    for (int i = 0; i < n; ++i) herd::receive([&](seq) { ++got; }, herd::after(5s));
    reason = down_reason(ref);
  });
  CHECK(r.is_normal());
  CHECK(sent_all);
  CHECK(got == n);
  CHECK_FALSE(after_block);
  CHECK(dtors == 1);
  REQUIRE(reason.has_value());
  CHECK(*reason == herd::exit_reason::shutdown("signal"));
}

TEST_CASE("an exit signal unwinds the whole stack: every destructor runs, innermost first", "[links]") {
  unsigned workers = HERD_WORKERS();
  std::vector<int> order;
  std::optional<herd::exit_reason> reason;
  auto r = run_node(opts(workers), [&] {
    herd::pid me = herd::self();
    struct frame_guard {
      herd::pid to;
      int n;
      ~frame_guard() { herd::send(to, from_dtor{n}); }
    };
    struct deep {
      static void go(herd::pid to, int depth) {
        frame_guard g{to, depth};
        if (depth == 0) {
          herd::send(to, ready{herd::self()});
          herd::receive([](stop) {});
          return;
        }
        go(to, depth - 1);
      }
    };
    auto [t, ref] = herd::spawn_monitor([me] { deep::go(me, 5); });
    herd::receive([](ready) {});
    herd::exit(t, herd::exit_reason::kill());
    for (int i = 0; i < 6; ++i) herd::receive([&](from_dtor d) { order.push_back(d.n); }, herd::after(5s));
    reason = down_reason(ref);
  });
  CHECK(r.is_normal());
  CHECK(order == std::vector<int>{0, 1, 2, 3, 4, 5});
  REQUIRE(reason.has_value());
  CHECK(reason->kind() == herd::exit_kind::killed);
}

TEST_CASE("a process that swallows the exit around its receive and loops is still ended - its reason stays the "
          "signal's",
          "[links]") {
  unsigned workers = HERD_WORKERS();
  std::atomic<int> swallowed{0}, handled_after_kill{0}, dtors{0};
  std::optional<herd::exit_reason> reason;
  auto r = run_node(opts(workers), [&] {
    herd::pid me = herd::self();
    auto [t, ref] = herd::spawn_monitor([&, me] {
      dtor_probe probe(dtors);
      herd::send(me, ready{herd::self()});
      // A server loop that keeps going whatever its receive throws. (Bounded
      // so that a regression cannot hang the suite; see the subprocess test
      // below for the unbounded loop.)
      for (int i = 0; i < 200; ++i) {
        try {
          herd::receive([&](seq) { ++handled_after_kill; }, [](stop) {});
        } catch (...) {
          ++swallowed;
        }
      }
      // Returning normally does not change the reason either.
    });
    herd::receive([](ready) {});
    herd::exit(t, herd::exit_reason::kill());
    for (int i = 0; i < 10; ++i) herd::send(t, seq{i});  // work it must not do any more
    reason = down_reason(ref);
  });
  CHECK(r.is_normal());
  REQUIRE(reason.has_value());
  CHECK(reason->kind() == herd::exit_kind::killed);
  CHECK(swallowed == 200);
  CHECK(handled_after_kill == 0);
  CHECK(dtors == 1);
}

// The scenario of the next test, in a child process: a server loop with
// `catch (...) {}` around its receive and no way out but the exit.
TEST_CASE("links_test hidden: a receive loop that swallows every exception is killed", "[.][links_subprocess]") {
  herd::node_options o = herd::test::opts(2);
  o.shutdown_timeout = 1500ms;
  std::optional<herd::exit_reason> reason;
  auto r = run_node(o, [&] {
    auto [t, ref] = herd::spawn_monitor([] {
      for (;;) {
        try {
          herd::receive([](stop) {});
        } catch (...) {
        }
      }
    });
    herd::exit(t, herd::exit_reason::kill());
    reason = down_reason(ref, 2s);
  });
  CHECK(r.is_normal());
  REQUIRE(reason.has_value());
  CHECK(reason->kind() == herd::exit_kind::killed);
}

// BUG: (a design limit, but the rule says the process "is still ended") herd
// rethrows the swallowed exit at every blocking point, so a loop that catches
// everything around its receive never ends: after exit(pid, kill) it spins at
// 100% CPU, no `down` ever comes, and node shutdown aborts after
// shutdown_timeout ("did not reach a blocking point since the signal" -- it
// reached one on every iteration). Erlang's kill always ends the process.
// Runs in a subprocess because the abort would end the suite.
TEST_CASE("a receive loop that swallows every exception forever is still ended by kill", "[links]") {
  char exe[4096];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  REQUIRE(len > 0);
  exe[len] = 0;
  herd::test::subprocess_options so;
  so.timeout = 20000ms;
  auto res = herd::test::run_subprocess({exe, "links_test hidden: a receive loop that swallows every exception is killed"}, so);
  INFO("stdout: " << res.out);
  INFO("stderr: " << res.err);
  REQUIRE(res.started);
  CHECK_FALSE(res.timed_out);
  CHECK(res.signal == 0);
  CHECK(res.exit_code == 0);
}

TEST_CASE("a destructor that sends and calls while a kill unwinds its process does not end the node", "[links]") {
  unsigned workers = HERD_WORKERS();
  int dtor_msgs = 0;
  bool call_outcome_recorded = false, server_still_answers = false;
  std::optional<herd::exit_reason> reason;
  auto r = run_node(opts(workers), [&] {
    herd::pid me = herd::self();
    herd::pid server = herd::spawn([] {
      for (bool done = false; !done;) {
        herd::receive([](herd::call_request<int>&& c) { herd::reply(c.from, c.req + 1); },
                      [&](stop) { done = true; });
      }
    });
    struct sends_and_calls {
      herd::pid to, server;
      ~sends_and_calls() {
        herd::send(to, from_dtor{1});
        int outcome = 0;
        try {
          outcome = herd::call<int>(server, 41, 1s);  // does not block while unwinding
        } catch (const herd::call_error& e) {
          outcome = -1 - int(e.kind());
        }
        herd::send(to, from_dtor{outcome == 0 ? 1000 : 2});
        herd::send(to, from_dtor{3});
      }
    };
    auto [t, ref] = herd::spawn_monitor([me, server] {
      sends_and_calls d{me, server};
      herd::send(me, ready{herd::self()});
      herd::receive([](stop) {});
    });
    herd::receive([](ready) {});
    herd::exit(t, herd::exit_reason::kill());
    reason = down_reason(ref);
    for (int i = 0; i < 3; ++i)
      herd::receive([&](from_dtor d) {
        ++dtor_msgs;
        if (d.n == 2 || d.n == 1000) call_outcome_recorded = true;
      }, herd::after(5s));
    try {
      server_still_answers = herd::call<int>(server, 1, 5s) == 2;
    } catch (...) {
    }
    herd::send(server, stop{});
  });
  CHECK(r.is_normal());
  REQUIRE(reason.has_value());
  CHECK(reason->kind() == herd::exit_kind::killed);
  CHECK(dtor_msgs == 3);
  CHECK(call_outcome_recorded);
  CHECK(server_still_answers);
}

// The scenario of the next test, in a child process: a destructor calls a
// server, with no try/catch, while a kill unwinds its process.
TEST_CASE("links_test hidden: a destructor calls while a kill unwinds it", "[.][links_subprocess]") {
  herd::node_options o = herd::test::opts(2);
  o.shutdown_timeout = 2000ms;
  std::optional<herd::exit_reason> reason;
  bool server_still_answers = false;
  auto r = run_node(o, [&] {
    herd::pid server = herd::spawn([] {
      for (bool done = false; !done;) {
        herd::receive([](herd::call_request<int>&& c) { herd::reply(c.from, c.req + 1); },
                      [&](stop) { done = true; });
      }
    });
    struct unregisters {
      herd::pid server;
      ~unregisters() { (void)herd::call<int>(server, 41, 1s); }  // e.g. "unregister me"
    };
    herd::pid me = herd::self();
    auto [t, ref] = herd::spawn_monitor([me, server] {
      unregisters u{server};
      herd::send(me, ready{herd::self()});
      herd::receive([](stop) {});
    });
    herd::receive([](ready) {});
    herd::exit(t, herd::exit_reason::kill());
    reason = down_reason(ref);
    server_still_answers = herd::call<int>(server, 1, 5s) == 2;
    herd::send(server, stop{});
  });
  CHECK(r.is_normal());
  REQUIRE(reason.has_value());
  CHECK(reason->kind() == herd::exit_kind::killed);
  CHECK(server_still_answers);
}

// BUG: docs/design.md says "A blocking call reached while unwinding (a
// destructor that calls or receives) neither blocks nor throws", and the rule
// says such a destructor does not end the node. herd::call reached while an
// exit unwinds the stack cannot block, so it throws call_error (timeout) out
// of the destructor -- which is noexcept: std::terminate, and the whole OS
// process aborts. (The test above with a try/catch in the destructor passes.)
TEST_CASE("a destructor that calls without a try/catch while a kill unwinds its process does not end the node",
          "[links]") {
  char exe[4096];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  REQUIRE(len > 0);
  exe[len] = 0;
  herd::test::subprocess_options so;
  so.timeout = 20000ms;
  auto res = herd::test::run_subprocess({exe, "links_test hidden: a destructor calls while a kill unwinds it"}, so);
  INFO("stdout: " << res.out);
  INFO("stderr: " << res.err);
  REQUIRE(res.started);
  CHECK_FALSE(res.timed_out);
  CHECK(res.signal == 0);
  CHECK(res.exit_code == 0);
}


TEST_CASE("a process killed while hibernated ends with killed - its continuation never runs", "[links]") {
  unsigned workers = HERD_WORKERS();
  std::atomic<bool> ran{false};
  std::atomic<int> capture_dtors{0};
  bool hibernated = false;
  std::optional<herd::exit_reason> reason;
  auto r = run_node(opts(workers), [&] {
    auto [h, ref] = herd::spawn_monitor([&]() -> herd::hibernation {
      return herd::hibernated([&ran, probe = std::make_shared<dtor_probe>(capture_dtors)] {
        ran = true;
        herd::receive([](stop) {});
      });
    });
    hibernated = herd::test::eventually_hibernated(h);
    herd::exit(h, herd::exit_reason::kill());
    reason = down_reason(ref);
  });
  CHECK(r.is_normal());
  REQUIRE(reason.has_value());
  CHECK(reason->kind() == herd::exit_kind::killed);
  CHECK(hibernated);
  CHECK_FALSE(ran);
  CHECK(capture_dtors == 1);
}

