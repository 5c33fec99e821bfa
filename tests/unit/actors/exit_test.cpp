// How a process dies: exceptions become exit reasons; herd::exit from the
// process itself or from another one unwinds it at its next blocking point,
// destructors run, swallowing the unwind does not help, and blocking calls made
// while unwinding neither block nor throw.
// herd-unity: file scope (its checks name its types with their namespaces)
#include <herd/actors.hpp>

#include <catch2/catch.hpp>

#include "support/node_fixture.hpp"

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>

using namespace std::chrono_literals;
using herd::test::dtor_probe;
using herd::test::run_node;

namespace exit_test_msgs {
struct stop {};
struct ready {};
struct unwound { int n; };
struct my_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
namespace deep {
template <class T>
struct templated_error : std::logic_error {
  using std::logic_error::logic_error;
};
}  // namespace deep

// Sends `unwound{n}` to `to` when destroyed (from whatever unwinds it).
struct notify_on_exit {
  herd::pid to;
  int n;
  ~notify_on_exit() { herd::send(to, unwound{n}); }
};
}  // namespace exit_test_msgs

using namespace exit_test_msgs;

TEST_CASE("a root that throws std::runtime_error ends with an error reason naming the type and what()", "[exit]") {
  unsigned workers = HERD_WORKERS();
  auto r = run_node(herd::test::opts(workers), [] { throw std::runtime_error("boom"); });
  CHECK(r.kind() == herd::exit_kind::error);
  CHECK(r.type() == "std::runtime_error");
  CHECK(r.what() == "boom");
  CHECK_FALSE(r.is_normal());
}

TEST_CASE("the error reason carries a custom exception's demangled name", "[exit]") {
  auto r = run_node(herd::test::opts(1), [] { throw my_error("custom"); });
  CHECK(r.kind() == herd::exit_kind::error);
  CHECK(r.type() == "exit_test_msgs::my_error");
  CHECK(r.what() == "custom");

  auto r2 = run_node(herd::test::opts(1), [] { throw deep::templated_error<int>("tpl"); });
  CHECK(r2.kind() == herd::exit_kind::error);
  CHECK(r2.type() == "exit_test_msgs::deep::templated_error<int>");
  CHECK(r2.what() == "tpl");
}

TEST_CASE("a non-std exception becomes an error named by its type", "[exit]") {
  auto r = run_node(herd::test::opts(1), [] { throw 42; });
  CHECK(r.kind() == herd::exit_kind::error);
  CHECK(r.type() == "int");

  auto r2 = run_node(herd::test::opts(1), [] { throw stop{}; });
  CHECK(r2.kind() == herd::exit_kind::error);
  CHECK(r2.type() == "exit_test_msgs::stop");
}

TEST_CASE("an exception thrown after a blocking point (resumed on any worker) is reported the same way", "[exit]") {
  unsigned workers = HERD_WORKERS();
  auto r = run_node(herd::test::opts(workers), [] {
    herd::pid me = herd::self();
    herd::spawn([me] {
      herd::test::eventually_parked(me);  // the root waits in its receive
      herd::send(me, 1);
    });
    herd::receive([](int) {});
    throw std::out_of_range("late");
  });
  CHECK(r.kind() == herd::exit_kind::error);
  CHECK(r.type() == "std::out_of_range");
  CHECK(r.what() == "late");
}

TEST_CASE("herd::exit(reason) ends the process with that reason, running its destructors", "[exit]") {
  unsigned workers = HERD_WORKERS();
  std::atomic<int> dtors{0};
  bool after_exit = false;
  auto r = run_node(herd::test::opts(workers), [&] {
    dtor_probe p(dtors);
    herd::exit(herd::exit_reason::shutdown("x"));
    after_exit = true;
  });
  CHECK(r.kind() == herd::exit_kind::shutdown);
  CHECK(r.what() == "x");
  CHECK(r == herd::exit_reason::shutdown("x"));
  CHECK(dtors == 1);
  CHECK_FALSE(after_exit);

  auto n = run_node(herd::test::opts(1), [] { herd::exit(herd::exit_reason::normal()); });
  CHECK(n.is_normal());
}

TEST_CASE("a child that throws ends alone: its destructors run, the root carries on", "[exit]") {
  unsigned workers = HERD_WORKERS();
  std::atomic<int> dtors{0};
  std::size_t exited_before = 0, exited_after = 0;
  bool counted = false;
  auto r = run_node(herd::test::opts(workers), [&] {
    exited_before = herd::current_node_stats().exited;
    herd::pid a = herd::spawn([&dtors] {
      dtor_probe p(dtors);
      herd::receive([](stop) {});
      throw std::runtime_error("child boom");
    });
    herd::spawn([&dtors] {
      dtor_probe p(dtors);
      throw 7;
    });
    herd::spawn([&dtors] {
      dtor_probe p(dtors);
      herd::receive([](stop) {});  // never told: shut down with the node
    });
    herd::send(a, stop{});
    counted = herd::test::eventually([&] { return dtors.load() == 2; }, 2000ms);
    herd::test::eventually([&] { return herd::current_node_stats().exited >= exited_before + 2; }, 2000ms);
    exited_after = herd::current_node_stats().exited;
  });
  CHECK(r.is_normal());
  CHECK(counted);
  CHECK(exited_after == exited_before + 2);
  CHECK(dtors == 3);
}

TEST_CASE("exit(pid, reason) from another process unwinds the target at its next blocking point", "[exit]") {
  unsigned workers = HERD_WORKERS();
  int unwound_n = 0;
  bool ran_after_receive = false;
  bool got_unwound = false;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    herd::pid target = herd::spawn([me, &ran_after_receive] {
      notify_on_exit guard{me, 1};
      herd::send(me, ready{});
      herd::receive([](stop) {});
      ran_after_receive = true;
    });
    herd::receive([](ready) {});
    herd::exit(target, herd::exit_reason::shutdown("bye"));
    got_unwound = herd::receive([&](unwound u) { unwound_n = u.n; return true; }, herd::after(5s, [] { return false; }));
  });
  CHECK(r.is_normal());
  CHECK(got_unwound);
  CHECK(unwound_n == 1);
  CHECK_FALSE(ran_after_receive);
}

TEST_CASE("exit(pid, reason) aimed at the root: run() returns that reason and the root's destructors ran", "[exit]") {
  unsigned workers = HERD_WORKERS();
  std::atomic<int> dtors{0};
  bool after = false;
  auto r = run_node(herd::test::opts(workers), [&] {
    dtor_probe p(dtors);
    herd::pid me = herd::self();
    herd::spawn([me] { herd::exit(me, herd::exit_reason::shutdown("from child")); });
    herd::receive([](stop) {});
    after = true;
  });
  CHECK(r == herd::exit_reason::shutdown("from child"));
  CHECK(dtors == 1);
  CHECK_FALSE(after);
}

TEST_CASE("a kill signal is reported as killed", "[exit]") {
  unsigned workers = HERD_WORKERS();
  auto r = run_node(herd::test::opts(workers), [] {
    herd::pid me = herd::self();
    herd::spawn([me] { herd::exit(me, herd::exit_reason::kill()); });
    herd::receive([](stop) {});
  });
  CHECK(r.kind() == herd::exit_kind::killed);
}

TEST_CASE("the first exit signal wins", "[exit]") {
  auto r = run_node(herd::test::opts(2), [] {
    herd::pid me = herd::self();
    herd::spawn([me] {
      herd::exit(me, herd::exit_reason::shutdown("first"));
      herd::exit(me, herd::exit_reason::kill());
    });
    herd::receive([](stop) {});
  });
  CHECK(r == herd::exit_reason::shutdown("first"));
}

TEST_CASE("exit(pid, normal) from another process is ignored (the target is not trapping exits)", "[exit]") {
  bool survived = false;
  auto r = run_node(herd::test::opts(2), [&] {
    herd::pid me = herd::self();
    herd::spawn([me] {
      herd::exit(me, herd::exit_reason::normal());
      herd::send(me, 1);
    });
    herd::receive([](int) {});
    herd::sleep(5ms);  // a blocking point under test, not synchronisation
    herd::yield();
    herd::receive([](int) {}, herd::after(10ms));
    survived = true;
  });
  CHECK(r.is_normal());
  CHECK(survived);
}

TEST_CASE("exit signals interrupt sleep and yield loops", "[exit]") {
  unsigned workers = HERD_WORKERS();
  int unwound_count = 0;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    herd::pid sleeper = herd::spawn([me] {
      notify_on_exit g{me, 1};
      herd::sleep(1h);  // the sleep the exit must interrupt
    });
    herd::pid yielder = herd::spawn([me] {
      notify_on_exit g{me, 2};
      for (;;) herd::yield();
    });
    herd::exit(sleeper, herd::exit_reason::shutdown());
    herd::exit(yielder, herd::exit_reason::kill());
    // Bounded only to end a broken run: the sleeper's hour is what must not pass.
    for (int i = 0; i < 2; ++i) herd::receive([&](unwound) { ++unwound_count; }, herd::after(60s));
  });
  CHECK(r.is_normal());
  CHECK(unwound_count == 2);
}

TEST_CASE("a process that catches everything around its receive is unwound again at each blocking point - "
          "its exit reason stays the signal's",
          "[exit]") {
  unsigned workers = HERD_WORKERS();
  int caught = 0;
  bool reached_end = false;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    herd::spawn([me] { herd::exit(me, herd::exit_reason::shutdown("sig")); });
    for (int i = 0; i < 3; ++i) {
      try {
        herd::receive([](stop) {});
      } catch (...) {
        ++caught;
      }
    }
    // Other blocking points throw it again too.
    try {
      herd::sleep(1h);  // a blocking point under test
    } catch (...) {
      ++caught;
    }
    try {
      herd::yield();
    } catch (...) {
      ++caught;
    }
    reached_end = true;
    // Returning normally does not change the reason.
  });
  CHECK(caught == 5);
  CHECK(reached_end);
  CHECK(r == herd::exit_reason::shutdown("sig"));
}

TEST_CASE("a process that swallows a kill and then throws its own exception still reports killed", "[exit]") {
  auto r = run_node(herd::test::opts(2), [] {
    herd::pid me = herd::self();
    herd::spawn([me] { herd::exit(me, herd::exit_reason::kill()); });
    try {
      herd::receive([](stop) {});
    } catch (...) {
    }
    throw std::runtime_error("mine");
  });
  CHECK(r.kind() == herd::exit_kind::killed);
}

TEST_CASE("a blocking point inside a catch block rethrows a pending exit", "[exit]") {
  int caught = 0;
  auto r = run_node(herd::test::opts(2), [&] {
    herd::pid me = herd::self();
    herd::spawn([me] { herd::exit(me, herd::exit_reason::shutdown("again")); });
    try {
      herd::receive([](stop) {});
    } catch (...) {
      ++caught;
      herd::receive([](stop) {});  // throws again: not unwinding here, we are in a handler
      caught = 100;
    }
  });
  CHECK(caught == 1);
  CHECK(r == herd::exit_reason::shutdown("again"));
}

TEST_CASE("a destructor that receives while an exit signal unwinds the process does not block", "[exit]") {
  unsigned workers = HERD_WORKERS();
  bool dtor_done = false;
  int found = 0;
  bool timeout_ran = false;
  // Hours: had any of them waited, the test would time out (ctest's 600 s).
  struct receiving_dtor {
    bool* done;
    int* found;
    bool* timeout_ran;
    ~receiving_dtor() {
      // No match waits: returns at once, as if after(0).
      herd::receive([](stop) {});
      herd::receive([](stop) {}, herd::after(1h, [this] { *timeout_ran = true; }));
      herd::sleep(1h);  // the call under test: returns at once while an exit unwinds
      // A message already there is still taken.
      herd::receive([this](int v) { *found = v; }, herd::after(1h));
      *done = true;
    }
  };
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    receiving_dtor d{&dtor_done, &found, &timeout_ran};
    herd::send(me, 5);
    herd::spawn([me] { herd::exit(me, herd::exit_reason::shutdown("unwind")); });
    herd::receive([](stop) {});
  });
  CHECK(r == herd::exit_reason::shutdown("unwind"));
  CHECK(dtor_done);
  CHECK(found == 5);
  CHECK(timeout_ran);  // "as if after(0)": the after clause's action runs
}

TEST_CASE("a destructor that receives while herd::exit(reason) unwinds the process does not block", "[exit]") {
  bool dtor_done = false;
  // Hours: had either waited, the test would time out (ctest's 600 s).
  struct receiving_dtor {
    bool* done;
    ~receiving_dtor() {
      herd::receive([](stop) {}, herd::after(1h));
      herd::sleep(1h);  // the call under test: returns at once while an exit unwinds
      *done = true;
    }
  };
  auto r = run_node(herd::test::opts(2), [&] {
    receiving_dtor d{&dtor_done};
    herd::exit(herd::exit_reason::shutdown("self"));
  });
  CHECK(r == herd::exit_reason::shutdown("self"));
  CHECK(dtor_done);
}

// Only an exit makes blocking calls in destructors return at once; while an
// ordinary exception unwinds (it may yet be caught), a destructor receives as
// usual — Erlang's try ... after (docs/erlang-differences.md).
TEST_CASE("a destructor that receives while an ordinary exception unwinds receives as usual", "[exit]") {
  int got = 0;
  std::atomic<bool> waited{false};
  struct receiving_dtor {
    int* got;
    ~receiving_dtor() { *got = herd::receive([](int v) { return v; }, herd::after(60s, [] { return -1; })); }
  };
  auto r = run_node(herd::test::opts(2), [&] {
    herd::pid me = herd::self();
    herd::spawn([me, &waited] {
      // The 7 is sent only once the unwinding root waits for it.
      waited = herd::test::eventually_parked(me, 0, 60s);
      herd::send(me, 7);
    });
    receiving_dtor d{&got};
    throw std::runtime_error("unwinding");
  });
  CHECK(r.kind() == herd::exit_kind::error);
  CHECK(r.what() == "unwinding");
  CHECK(waited);
  CHECK(got == 7);
}

TEST_CASE("an exit signal a process sends itself is acted on at its next blocking point, not at send", "[exit]") {
  unsigned workers = HERD_WORKERS();
  int got = 0;
  std::atomic<bool> sent_all{false}, after_yield{false};
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    herd::spawn([me, &sent_all, &after_yield] {
      herd::exit(herd::self(), herd::exit_reason::shutdown("later"));
      // Sends are not blocking points (and count reductions: past the budget
      // the process is preempted, but not unwound).
      for (int i = 0; i < 5000; ++i) herd::send(me, i);
      sent_all = true;
      herd::yield();  // unwinds here
      after_yield = true;
    });
    for (int i = 0; i < 5000; ++i) herd::receive([&](int) { ++got; });
  });
  CHECK(r.is_normal());
  CHECK(got == 5000);
  CHECK(sent_all);
  CHECK_FALSE(after_yield);
}

TEST_CASE("a send to a process that has exited is dropped and freed", "[exit]") {
  unsigned workers = HERD_WORKERS();
  bool gone = false;
  auto r = run_node(herd::test::opts(workers), [&] {
    std::size_t base = herd::current_node_stats().exited;
    herd::pid child = herd::spawn([] {});
    gone = herd::test::eventually([&] { return herd::current_node_stats().exited > base; }, 2000ms);
    for (int i = 0; i < 1000; ++i) herd::send(child, std::string(100, 'x'));
    herd::exit(child, herd::exit_reason::kill());  // no-op on a dead pid
  });
  CHECK(r.is_normal());
  CHECK(gone);
}

TEST_CASE("exit(pid, reason) from a foreign thread unwinds the target", "[exit]") {
  unsigned workers = HERD_WORKERS();
  int unwound_n = 0;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    herd::pid target = herd::spawn([me] {
      notify_on_exit g{me, 3};
      herd::receive([](stop) {});
    });
    herd::blocking([&] {
      std::thread t([target] { herd::exit(target, herd::exit_reason::shutdown("foreign")); });
      t.join();
    });
    unwound_n = herd::receive([](unwound u) { return u.n; }, herd::after(5s, [] { return -1; }));
  });
  CHECK(r.is_normal());
  CHECK(unwound_n == 3);
}
