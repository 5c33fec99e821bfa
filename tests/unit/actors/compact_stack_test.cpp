// spawn_options::compact_stack: a process with no stack of its own runs on a
// shared slot and waits copied out. Its frames (and pointers into them) must
// come back intact whichever slot-mates ran meanwhile, on whichever worker;
// what another thread writes into its frames while it waits (blocking())
// must land; exits, monitors, timers, exceptions and hibernation behave as
// for any process.
#include <herd/actors.hpp>
#include <herd/runtime/blocking.hpp>
#include <herd/runtime/runtime.hpp>

#include <catch2/catch.hpp>

#include "support/node_fixture.hpp"

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using herd::test::run_node;

namespace compact_stack_test_msgs {
struct tick {};
struct ack { int id; bool intact; };
struct token { int hops; };
struct finished { int id; bool intact; };
struct ask { herd::pid from; };
struct answer { int v; };
}  // namespace compact_stack_test_msgs

using namespace compact_stack_test_msgs;

namespace {

const herd::spawn_options compact{.compact_stack = true};

herd::node_options compact_opts(unsigned workers, unsigned slots) {
  herd::node_options o = herd::test::opts(workers);
  o.compact_slots = slots;
  return o;
}

// A frame whose bytes and self-pointers depend on id and depth: waits at the
// bottom of `depth` calls, then checks every level on the way back up.
[[gnu::noinline]] bool wait_deep(int id, int depth, int rounds, herd::pid coord) {
  volatile uint8_t pad[200];
  for (int i = 0; i < 200; ++i) pad[i] = static_cast<uint8_t>(id * 31 + depth * 7 + i);
  volatile uint8_t* self_ptr = &pad[id % 200];
  bool ok = true;
  if (depth > 0) {
    ok = wait_deep(id, depth - 1, rounds, coord);
  } else {
    for (int r = 0; r < rounds; ++r) {
      herd::receive([](tick) {});
      bool intact = true;
      for (int i = 0; i < 200; ++i) intact = intact && pad[i] == static_cast<uint8_t>(id * 31 + i);
      herd::send(coord, ack{id, intact});
      ok = ok && intact;
    }
  }
  for (int i = 0; i < 200; ++i) ok = ok && pad[i] == static_cast<uint8_t>(id * 31 + depth * 7 + i);
  return ok && self_ptr == &pad[id % 200] && *self_ptr == static_cast<uint8_t>(id * 31 + depth * 7 + id % 200);
}

}  // namespace

TEST_CASE("compact processes get their frames back after every wait, whoever used the slot meanwhile",
          "[compact]") {
  unsigned workers = HERD_WORKERS();
  // Fewer slots than processes and than workers: most runs copy a slot-mate
  // out and this one in, and fibers queue for their slot.
  unsigned slots = GENERATE(1u, 3u);
  constexpr int n = 60, rounds = 20;
  int acks = 0, bad = 0, finished_ok = 0;
  herd::rt::runtime_metrics m;
  auto r = run_node(compact_opts(workers, slots), [&] {
    herd::pid me = herd::self();
    std::vector<herd::pid> ps;
    for (int id = 0; id < n; ++id)
      ps.push_back(herd::spawn(compact, [me, id] {
        // Depths differ, so slot-mates leave frames of other sizes behind.
        bool ok = wait_deep(id, id % 5, rounds, me);
        herd::send(me, finished{id, ok});
      }));
    for (int r = 0; r < rounds; ++r) {
      // Every process at once, in an order that changes per round.
      for (int k = 0; k < n; ++k) herd::send(ps[(k * 7 + r * 13) % n], tick{});
      for (int k = 0; k < n; ++k)
        herd::receive([&](ack a) {
          ++acks;
          if (!a.intact) ++bad;
        });
    }
    for (int k = 0; k < n; ++k)
      herd::receive([&](finished f) {
        if (f.intact) ++finished_ok;
      });
    herd::rt::current_metrics(m);
  });
  CHECK(r.is_normal());
  // They did run copied: on the slots asked for, once per wake at least.
  CHECK(m.compact_slots == slots);
  CHECK(m.compact_runs >= uint64_t(n) * (rounds + 1));
  CHECK(acks == n * rounds);
  CHECK(bad == 0);
  CHECK(finished_ok == n);
}

TEST_CASE("a token goes round a ring of compact processes sharing one slot", "[compact]") {
  unsigned workers = HERD_WORKERS();
  constexpr int n = 40, laps = 25;
  int hops = 0;
  bool all_intact = true;
  auto r = run_node(compact_opts(workers, 1), [&] {
    herd::pid me = herd::self();
    // Each forwards to the next; the last gives the token back to the root.
    herd::pid next = me;
    for (int id = n - 1; id >= 0; --id)
      next = herd::spawn(compact, [me, next, id] {
        std::string mine = "process " + std::to_string(id) + " holds this string on its frame";
        const std::string copy = mine;
        bool intact = true;
        for (int lap = 0; lap < laps; ++lap)
          herd::receive([&](token t) {
            intact = intact && mine == copy;
            herd::send(next, token{t.hops + 1});
          });
        herd::send(me, finished{id, intact});
      });
    for (int lap = 0; lap < laps; ++lap) {
      herd::send(next, token{hops});
      herd::receive([&](token t) { hops = t.hops; });
    }
    for (int k = 0; k < n; ++k) herd::receive([&](finished f) { all_intact = all_intact && f.intact; });
  });
  CHECK(r.is_normal());
  CHECK(hops == n * laps);
  CHECK(all_intact);
}

TEST_CASE("a compact process calls a server, waits with after, sleeps and catches across waits", "[compact]") {
  unsigned workers = HERD_WORKERS();
  int answered = 0;
  bool timed_out = false, caught = false, rethrown = false;
  auto r = run_node(compact_opts(workers, 2), [&] {
    herd::pid server = herd::spawn([] {
      for (;;) {
        bool stop = false;
        herd::receive([](ask a) { herd::send(a.from, answer{7}); }, [&](tick) { stop = true; });
        if (stop) return;
      }
    });
    herd::pid me = herd::self();
    herd::pid c = herd::spawn(compact, [&, server, me] {
      for (int i = 0; i < 10; ++i) {
        herd::send(server, ask{herd::self()});
        herd::receive([&](answer a) { answered += a.v == 7; });
      }
      herd::receive([](finished) {}, herd::after(20ms, [&] { timed_out = true; }));
      herd::sleep(5ms);
      try {
        try {
          throw std::runtime_error("thrown before a wait");
        } catch (const std::exception& e) {
          // Waiting inside a catch block: the exception in flight is this
          // process's, kept across the copy out and in.
          herd::send(server, ask{herd::self()});
          herd::receive([](answer) {});
          caught = std::string(e.what()) == "thrown before a wait";
          throw;
        }
      } catch (const std::runtime_error&) {
        rethrown = true;
      }
      herd::send(me, finished{0, true});
    });
    (void)c;
    herd::receive([](finished) {});
    herd::send(server, tick{});
  });
  CHECK(r.is_normal());
  CHECK(answered == 10);
  CHECK(timed_out);
  CHECK(caught);
  CHECK(rethrown);
}

TEST_CASE("blocking() in a compact process keeps its slot, and other compact processes take the others",
          "[compact]") {
  unsigned workers = HERD_WORKERS();
  std::atomic<bool> other_ran{false};
  std::string from_pool;
  bool waited_for_other = false;
  auto r = run_node(compact_opts(workers, 2), [&] {
    herd::pid me = herd::self();
    herd::spawn(compact, [&, me] {
      // The job and its result live in this frame while the process waits.
      std::string s = herd::rt::blocking([&] {
        // Returns once a second compact process has run: it cannot have used
        // this process's slot, which this one keeps while it is blocked.
        for (int i = 0; i < 200000 && !other_ran.load(); ++i) std::this_thread::sleep_for(50us);
        waited_for_other = other_ran.load();
        return std::string(300, 'x') + "done on the pool";
      });
      from_pool = s;
      herd::send(me, finished{1, true});
    });
    herd::spawn(compact, [&, me] {
      other_ran = true;
      herd::send(me, finished{2, true});
    });
    for (int k = 0; k < 2; ++k) herd::receive([](finished) {});
  });
  CHECK(r.is_normal());
  CHECK(waited_for_other);
  CHECK(from_pool == std::string(300, 'x') + "done on the pool");
}

TEST_CASE("a compact process that is killed, crashes or hibernates ends or wakes like any other", "[compact]") {
  unsigned workers = HERD_WORKERS();
  std::string killed_reason, crash_reason;
  int woke_with = 0;
  auto r = run_node(compact_opts(workers, 2), [&] {
    auto [waiter, m1] = herd::spawn_monitor(compact, [] { herd::receive([](tick) {}); });
    herd::exit(waiter, herd::exit_reason::kill());
    herd::receive([&](herd::down d) { killed_reason = d.reason.to_string(); });
    auto [crasher, m2] = herd::spawn_monitor(compact, [] {
      herd::receive([](tick) {});
      throw std::runtime_error("compact crash");
    });
    herd::send(crasher, tick{});
    herd::receive([&](herd::down d) { crash_reason = d.reason.to_string(); });
    herd::pid me = herd::self();
    herd::pid h = herd::spawn(compact, [me]() -> herd::hibernation {
      return herd::hibernated([me] { herd::receive([&](answer a) { herd::send(me, answer{a.v + 1}); }); });
    });
    herd::test::eventually_hibernated(h, 60s);
    herd::send(h, answer{41});
    herd::receive([&](answer a) { woke_with = a.v; });
    (void)m1, (void)m2;
  });
  CHECK(r.is_normal());
  CHECK(killed_reason == "killed");
  CHECK(crash_reason.find("compact crash") != std::string::npos);
  CHECK(woke_with == 42);
}

TEST_CASE("compact options out of range are refused with what is allowed", "[compact]") {
  bool refused = false;
  std::string what;
  auto r = run_node(herd::test::opts(1), [&] {
    try {
      herd::spawn(herd::spawn_options{.stack_size = 1 << 20, .compact_stack = true}, [] {});
    } catch (const herd::spawn_error& e) {
      refused = true;
      what = e.what();
    }
  });
  CHECK(r.is_normal());
  CHECK(refused);
  CHECK(what.find("default stack size") != std::string::npos);
  herd::node_options o = herd::test::opts(1);
  o.compact_slots = 5000;
  CHECK_THROWS_WITH(herd::node(o), Catch::Contains("compact_slots must be from 0"));
}
