// The node: run() returns the root's reason; when the root exits every other
// process is shut down (unwound: destructors run); nothing is left behind.
#include <herd/actors.hpp>

#include <catch2/catch.hpp>

#include "support/node_fixture.hpp"
#include "support/scale.hpp"
#include "support/subprocess.hpp"

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

using namespace std::chrono_literals;
using herd::test::dtor_probe;
using herd::test::run_node;

namespace node_test_msgs {
struct stop {};
struct ready { int id; };
}  // namespace node_test_msgs

using namespace node_test_msgs;

TEST_CASE("when the root exits, processes blocked, sleeping, yielding or hibernated are shut down and unwound",
          "[node]") {
  unsigned workers = HERD_WORKERS();
  std::atomic<int> dtors{0};
  std::atomic<int> continuations_run{0};
  const int per_kind = int(herd::test::scaled(50, 20));
  // Hours of sleep and timeout: a node that waited for them would time the test out.
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    for (int i = 0; i < per_kind; ++i) {
      herd::pid a = herd::spawn([&dtors] {
        dtor_probe p(dtors);
        herd::receive([](stop) {});
      });
      herd::send(a, std::string(100, 'q'));  // a message left in its mailbox
      herd::spawn([&dtors] {
        dtor_probe p(dtors);
        herd::sleep(1h);  // the state under test: sleeping
      });
      herd::spawn([&dtors, me] {
        dtor_probe p(dtors);
        herd::send(me, ready{0});
        for (;;) herd::yield();
      });
      herd::spawn([&dtors, &continuations_run]() -> herd::hibernation {
        return herd::hibernated([p = std::make_shared<dtor_probe>(dtors), &continuations_run] {
          ++continuations_run;
        });
      });
      // Deep: blocked in receive under nested frames, with a timeout.
      herd::spawn([&dtors] {
        dtor_probe outer(dtors);
        [&] {
          dtor_probe inner(dtors);
          herd::receive([](stop) {}, herd::after(1h));
        }();
      });
    }
    for (int i = 0; i < per_kind; ++i) herd::receive([](ready) {});
    herd::send(me, std::string("left in the root's mailbox"));
  });
  CHECK(r.is_normal());
  CHECK(dtors == per_kind * 6);
  CHECK(continuations_run == 0);
}

TEST_CASE("run() returns the root's reason, whatever the other processes end with", "[node]") {
  unsigned workers = HERD_WORKERS();
  auto r = run_node(herd::test::opts(workers), [] {
    herd::spawn([] { throw std::runtime_error("child"); });
    herd::spawn([] { herd::receive([](stop) {}); });
    herd::exit(herd::exit_reason::shutdown("root"));
  });
  CHECK(r == herd::exit_reason::shutdown("root"));
}

TEST_CASE("stats() counts processes spawned and exited", "[node]") {
  unsigned workers = HERD_WORKERS();
  const int n_children = 100;
  herd::node_stats inside{};
  std::ptrdiff_t before = herd::node::live_messages();
  herd::node n(herd::test::opts(workers));
  auto r = n.run([&] {
    for (int i = 0; i < n_children; ++i) herd::spawn([] {});
    herd::spawn([] { herd::receive([](stop) {}); });
    herd::test::eventually([&] { return herd::current_node_stats().exited >= std::size_t(n_children); }, 2000ms);
    inside = herd::current_node_stats();
  });
  herd::test::check_clean(n, before);
  CHECK(r.is_normal());
  CHECK(inside.spawned == std::size_t(n_children + 2));
  CHECK(inside.exited == std::size_t(n_children));
  CHECK(inside.live_processes == 2);
  CHECK(inside.max_actors >= herd::node_options{}.max_actors);
  herd::node_stats after = n.stats();
  CHECK(after.spawned == std::size_t(n_children + 2));
  CHECK(after.exited == std::size_t(n_children + 2));
  CHECK(after.live_processes == 0);
  // No node runs now.
  herd::node_stats none = herd::current_node_stats();
  CHECK(none.spawned == 0);
  CHECK(none.live_processes == 0);
}

TEST_CASE("node::run may be called once", "[node]") {
  herd::node n(herd::test::opts(1));
  auto r = n.run([] {});
  CHECK(r.is_normal());
  CHECK_THROWS_AS(n.run([] {}), std::logic_error);
}

TEST_CASE("a node can be made and run many times in one process", "[node]") {
  int sum = 0;
  for (int i = 0; i < 10; ++i) {
    auto r = run_node(herd::test::opts(1 + i % 3), [&] {
      herd::pid me = herd::self();
      herd::spawn([me, i] { herd::send(me, i); });
      sum += herd::receive([](int v) { return v; });
    });
    CHECK(r.is_normal());
  }
  CHECK(sum == 45);
}

TEST_CASE("many processes shut down with the node, with mail queued, leak nothing", "[node]") {
  unsigned workers = HERD_WORKERS();
  const int n = int(herd::test::scaled(2000, 500));
  std::atomic<int> dtors{0};
  auto r = run_node(herd::test::opts(workers), [&] {
    for (int i = 0; i < n; ++i) {
      herd::pid p = herd::spawn([&dtors] {
        dtor_probe d(dtors);
        herd::receive([](stop) {});
      });
      for (int k = 0; k < 5; ++k) herd::send(p, k);
    }
  });
  CHECK(r.is_normal());
  CHECK(dtors == n);
}

TEST_CASE("when the root exits while a process is in blocking(), the node waits for it and unwinds it", "[node][blocking]") {
  unsigned workers = HERD_WORKERS();
  std::atomic<int> dtors{0};
  std::atomic<bool> fn_done{false};
  auto t0 = herd::test::clk::now();
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::spawn([&] {
      dtor_probe p(dtors);
      herd::blocking([&] {
        std::this_thread::sleep_for(150ms);  // the blocking work in flight as the root ends
        fn_done = true;
      });
    });
  });
  double ms = herd::test::ms_since(t0);
  CHECK(r.is_normal());
  CHECK(fn_done);
  CHECK(dtors == 1);
  CHECK(ms >= 140);
}

namespace node_test_msgs {
struct hello { int from; };
// Sends to every other process of its group when destroyed (during shutdown).
struct farewell {
  std::vector<herd::pid>* group;
  int me;
  ~farewell() {
    for (herd::pid p : *group) herd::send(p, hello{me});
    herd::send(p_root, std::string(64, 'f'));  // the root is gone: dropped
  }
  herd::pid p_root;
};
}  // namespace node_test_msgs

TEST_CASE("messages sent by destructors while the node shuts down are freed", "[node]") {
  unsigned workers = HERD_WORKERS();
  std::vector<herd::pid> group;
  std::atomic<int> dtors{0};
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    for (int i = 0; i < 50; ++i)
      group.push_back(herd::spawn([&group, &dtors, i, me] {
        dtor_probe d(dtors);
        farewell f{&group, i, me};
        herd::receive([](stop) {});
      }));
  });
  CHECK(r.is_normal());
  CHECK(dtors == 50);
}

// The scenario of the next test, run in a child process: a process that is
// shut down with the node spawns a new process from its destructor (as a
// supervisor restarting a child would). Exits 0 when the node stops in time.
TEST_CASE("node_test hidden: a destructor spawns while the node shuts down", "[.][node_subprocess]") {
  herd::node_options o = herd::test::opts(2);
  o.shutdown_timeout = 2000ms;
  struct spawner_on_exit {
    ~spawner_on_exit() {
      // Some cleanup work first (blocking the worker, for the test's sake), so
      // the node has surely sent its shutdown signals before the spawn.
      // Makes the scenario likely; too short, the test only checks less (it cannot fail for it).
      std::this_thread::sleep_for(100ms);
      herd::spawn([] { herd::receive([](stop) {}); });
    }
  };
  auto r = run_node(o, [] {
    herd::spawn([] {
      spawner_on_exit s;
      herd::receive([](stop) {});
    });
  });
  CHECK(r.is_normal());
}

// A process spawned while the node shuts down (here by the destructor of a
// process being unwound, as a supervisor restarting a child would) gets the
// shutdown signal too. Runs in a subprocess: a regression would abort.
TEST_CASE("a process spawned during node shutdown is shut down too", "[node]") {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  REQUIRE(n > 0);
  exe[n] = 0;
  herd::test::subprocess_options so;
  so.timeout = 20000ms;
  auto res = herd::test::run_subprocess({exe, "node_test hidden: a destructor spawns while the node shuts down"}, so);
  INFO("stdout: " << res.out);
  INFO("stderr: " << res.err);
  REQUIRE(res.started);
  CHECK_FALSE(res.timed_out);
  CHECK(res.signal == 0);
  CHECK(res.exit_code == 0);
}
