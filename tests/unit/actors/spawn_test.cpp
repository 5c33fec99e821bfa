// spawn: limits, options (stack size, priority), arguments, depth-first start,
// spawning from foreign threads, pids that are never reused for strangers.
#include <herd/actors.hpp>
#include <herd/runtime/runtime.hpp>

#include <catch2/catch.hpp>

#include "support/node_fixture.hpp"
#include "support/scale.hpp"

#include <atomic>
#include <cstring>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using herd::test::run_node;

namespace spawn_test_msgs {
struct stop {};
struct result { long v; };
struct done { int id; };

struct counted {
  static inline std::atomic<int> copies{0};
  static inline std::atomic<int> moves{0};
  int v = 0;
  explicit counted(int x) : v(x) {}
  counted(const counted& o) : v(o.v) { ++copies; }
  counted(counted&& o) noexcept : v(o.v) { ++moves; }
};
}  // namespace spawn_test_msgs

using namespace spawn_test_msgs;

TEST_CASE("spawning past max_actors fails cleanly with a spawn_error that names max_actors", "[spawn][limits]") {
  unsigned workers = HERD_WORKERS();
  const std::size_t max_actors = 1000;
  std::size_t alive_at_failure = 0, effective_limit = 0;
  std::string what;
  bool threw = false, wrong_exception = false, respawned = false;
  int stopped = 0;
  herd::node_options o = herd::test::opts(workers);
  o.max_actors = max_actors;
  auto r = run_node(o, [&] {
    herd::pid me = herd::self();
    effective_limit = herd::current_node_stats().max_actors;
    std::vector<herd::pid> pids;
    try {
      for (std::size_t i = 0; i < 2 * effective_limit + 10; ++i)
        pids.push_back(herd::spawn([me] { herd::receive([me](stop) { herd::send(me, done{0}); }); }));
    } catch (const herd::spawn_error& e) {
      threw = true;
      what = e.what();
    } catch (...) {
      wrong_exception = true;
    }
    alive_at_failure = herd::current_node_stats().live_processes;
    for (herd::pid p : pids) herd::send(p, stop{});
    for (std::size_t i = 0; i < pids.size(); ++i) herd::receive([&](done) { ++stopped; });
    herd::test::wait_live(1);
    // The slots came back: spawning works again.
    try {
      herd::spawn([me] { herd::send(me, done{1}); });
      respawned = herd::receive([](done d) { return d.id == 1; }, herd::after(2s, [] { return false; }));
    } catch (const herd::spawn_error&) {
    }
  });
  CHECK(r.is_normal());
  CHECK(threw);
  CHECK_FALSE(wrong_exception);
  CHECK_THAT(what, Catch::Contains("max_actors"));
  INFO("alive at failure " << alive_at_failure << ", effective limit " << effective_limit);
  CHECK(alive_at_failure >= max_actors);         // at least max_actors fit (root included)
  CHECK(alive_at_failure <= effective_limit);    // and no more than the effective limit
  CHECK(stopped == int(alive_at_failure) - 1);
  CHECK(respawned);
}

TEST_CASE("a process with a 1 MiB stack can use a 512 KiB local buffer", "[spawn][stack]") {
  unsigned workers = HERD_WORKERS();
  long sum = 0;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    herd::spawn({.stack_size = 1 << 20}, [me] {
      volatile char buf[512 * 1024];
      for (std::size_t i = 0; i < sizeof buf; i += 512) buf[i] = char(1);
      long s = 0;
      for (std::size_t i = 0; i < sizeof buf; i += 512) s += buf[i];
      herd::sleep(1ms);  // a switch with the big frame live
      herd::send(me, result{s});
    });
    herd::receive([&](result x) { sum = x.v; });
  });
  CHECK(r.is_normal());
  CHECK(sum == 1024);
}

TEST_CASE("an impossible stack size fails with spawn_error, leaking nothing", "[spawn][stack]") {
  bool threw = false;
  std::size_t live_before = 0, live_after = 0;
  auto r = run_node(herd::test::opts(1), [&] {
    live_before = herd::current_node_stats().live_processes;
    try {
      herd::spawn({.stack_size = std::size_t(1) << 40}, [] {});
    } catch (const herd::spawn_error&) {
      threw = true;
    }
    live_after = herd::current_node_stats().live_processes;
  });
  CHECK(r.is_normal());
  CHECK(threw);
  CHECK(live_after == live_before);
}

TEST_CASE("the priority option is accepted: high, normal and low processes all run", "[spawn]") {
  unsigned workers = HERD_WORKERS();
  std::set<int> ran;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    int id = 0;
    for (auto prio : {herd::priority::high, herd::priority::normal, herd::priority::low}) {
      herd::pid p = herd::spawn({.prio = prio}, [me, id] {
        herd::receive([](stop) {});
        herd::yield();
        herd::send(me, done{id});
      });
      herd::send(p, stop{});
      ++id;
    }
    for (int i = 0; i < 3; ++i) herd::receive([&](done d) { ran.insert(d.id); });
  });
  CHECK(r.is_normal());
  CHECK(ran == std::set<int>{0, 1, 2});
}

TEST_CASE("on one worker, runnable high-priority processes run before normal ones, normal before low",
          "[spawn][priority]") {
  std::vector<int> order;
  auto r = run_node(herd::test::opts(1), [&] {
    herd::pid me = herd::self();
    std::vector<herd::pid> pids;
    // Made runnable in the order low, normal, high; 3 of each.
    for (auto prio : {herd::priority::low, herd::priority::normal, herd::priority::high})
      for (int k = 0; k < 3; ++k)
        pids.push_back(herd::spawn({.prio = prio}, [me, &order, prio] {
          herd::receive([](stop) {});
          order.push_back(int(prio));
          herd::send(me, done{0});
        }));
    for (herd::pid p : pids) herd::send(p, stop{});
    for (std::size_t i = 0; i < pids.size(); ++i) herd::receive([](done) {});
  });
  CHECK(r.is_normal());
  const int lo = int(herd::priority::low), no = int(herd::priority::normal), hi = int(herd::priority::high);
  CHECK(order == std::vector<int>{hi, hi, hi, no, no, no, lo, lo, lo});
}

TEST_CASE("arguments are moved or copied into the process - a move-only argument works", "[spawn]") {
  unsigned workers = HERD_WORKERS();
  int got = 0;
  std::string s;
  int copies_rvalue = -1, copies_lvalue = -1;
  std::weak_ptr<int> watch;
  bool freed = false;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    // A move-only argument, taken by value: the function runs once, so spawn
    // passes its stored arguments as rvalues (as std::thread does).
    herd::spawn([](std::unique_ptr<int> p, herd::pid parent) { herd::send(parent, result{*p}); },
                std::make_unique<int>(41), me);
    got = int(herd::receive([](result x) { return x.v; }));

    std::string text = "copied";
    herd::spawn([](const std::string& t, herd::pid parent) { herd::send(parent, t); }, text, me);
    s = herd::receive([](std::string t) { return t; });

    counted::copies = 0;
    herd::spawn([](counted& c, herd::pid parent) { herd::send(parent, result{c.v}); }, counted(1), me);
    herd::receive([](result) {});
    copies_rvalue = counted::copies;

    counted lv(2);
    counted::copies = 0;
    herd::spawn([](counted& c, herd::pid parent) { herd::send(parent, result{c.v}); }, lv, me);
    herd::receive([](result) {});
    copies_lvalue = counted::copies;

    // The arguments are destroyed when the process ends.
    auto sp = std::make_shared<int>(5);
    watch = sp;
    herd::spawn([](std::shared_ptr<int>& p) { herd::receive([](stop) {}, herd::after(1ms)); (void)p; }, std::move(sp));
    freed = herd::test::eventually([&] { return watch.expired(); }, 2000ms);
  });
  CHECK(r.is_normal());
  CHECK(got == 41);
  CHECK(s == "copied");
  CHECK(copies_rvalue == 0);
  CHECK(copies_lvalue == 1);
  CHECK(freed);
}

TEST_CASE("spawn from a process runs the child at once until it first blocks (depth-first)", "[spawn]") {
  // One worker: with two, a thief may take the parent from "run next" once the
  // child has held its worker for 10 ms (the anti-starvation steal), which a
  // busy machine under TSan reaches; the parent then runs beside the child.
  std::vector<int> order;
  auto r = run_node(herd::test::opts(1), [&] {
    herd::pid child = herd::spawn([&order] {
      order.push_back(1);
      herd::receive([](stop) {});
      order.push_back(5);
    });
    order.push_back(2);
    herd::spawn([&order] { order.push_back(3); });
    order.push_back(4);
    herd::send(child, stop{});
    herd::test::eventually_gone(child, 60s);  // it has pushed its 5
  });
  CHECK(r.is_normal());
  CHECK(order == std::vector<int>{1, 2, 3, 4, 5});
}

TEST_CASE("spawn from a foreign thread queues the child", "[spawn]") {
  unsigned workers = HERD_WORKERS();
  int got = 0;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    std::thread t([me] {
      for (int i = 0; i < 10; ++i) herd::spawn([me, i] { herd::send(me, done{i}); });
    });
    for (int i = 0; i < 10; ++i) herd::receive([&](done d) { got += d.id; });
    herd::blocking([&] { t.join(); });
  });
  CHECK(r.is_normal());
  CHECK(got == 45);
}

TEST_CASE("processes spawned one after another from a foreign thread reuse their stacks, whatever the load",
          "[spawn][stack]") {
  // 2,000 live processes raise the workers' pool bounds: a stack freed on a
  // worker could stay in its pool, and the foreign thread, which cannot take
  // from a worker's pool, would carve a new one for every spawn (an observer
  // polling `tree` once a second spawns its helpers this way).
  unsigned workers = HERD_WORKERS();
  const int live = int(herd::test::scaled(2000, 500));
  uint64_t carved_before = 0, carved_after = 0;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    std::vector<herd::pid> idle;
    for (int i = 0; i < live; ++i) idle.push_back(herd::spawn([] { herd::receive([](stop) {}); }));
    herd::rt::runtime_metrics m;
    herd::rt::current_metrics(m);
    carved_before = m.stacks_carved;
    std::thread t([me] {
      for (int i = 0; i < 500; ++i) {
        herd::rt::runtime_metrics before;
        herd::rt::current_metrics(before);
        std::atomic<bool> ended{false};
        herd::spawn([&ended] { ended = true; });
        // Until it has given its stack back (bounded only to end a broken run).
        auto end = std::chrono::steady_clock::now() + 60s;
        for (herd::rt::runtime_metrics now; std::chrono::steady_clock::now() < end; std::this_thread::yield()) {
          herd::rt::current_metrics(now);
          if (ended && now.stacks_in_use <= before.stacks_in_use) break;
        }
      }
      herd::send(me, done{0});
    });
    herd::receive([](done) {});
    herd::blocking([&] { t.join(); });
    herd::rt::current_metrics(m);
    carved_after = m.stacks_carved;
    for (herd::pid p : idle) herd::send(p, stop{});
  });
  CHECK(r.is_normal());
  INFO("stacks carved: " << carved_before << " before 500 foreign spawns, " << carved_after << " after");
  CHECK(carved_after - carved_before <= 8);
}

TEST_CASE("the stacks of a burst spawned from a foreign thread give their pages back once the burst is over",
          "[spawn][stack]") {
  // They go back to the foreign threads' pool, which no worker owns; the
  // workers trim it when they park.
  const int burst = int(herd::test::scaled(300, 100));
  uint64_t trimmed_before = 0, trimmed_after = 0;
  auto r = run_node(herd::test::opts(HERD_WORKERS()), [&] {
    herd::pid me = herd::self();
    std::vector<herd::pid> ps;
    std::thread t([&] {
      for (int i = 0; i < burst; ++i)
        ps.push_back(herd::spawn([] {
          volatile char used[8192];  // dirty pages to give back
          for (std::size_t k = 0; k < sizeof used; k += 512) used[k] = 1;
          herd::receive([](stop) {});
        }));
      herd::send(me, done{0});
    });
    herd::receive([](done) {});
    herd::blocking([&] { t.join(); });
    herd::rt::runtime_metrics m;
    herd::rt::current_metrics(m);
    trimmed_before = m.stacks_trimmed;
    for (herd::pid p : ps) herd::send(p, stop{});
    // Quiet for a second, then a park trims them: wait up to 5 s.
    auto t0 = std::chrono::steady_clock::now();
    do {
      herd::sleep(100ms);  // polls the condition below
      herd::rt::current_metrics(m);
    } while (m.stacks_trimmed - trimmed_before < uint64_t(burst) && std::chrono::steady_clock::now() - t0 < 5s);
    trimmed_after = m.stacks_trimmed;
  });
  CHECK(r.is_normal());
  INFO(burst << " processes spawned from a foreign thread; stacks trimmed: " << trimmed_before << " while they lived, "
             << trimmed_after << " after");
  CHECK(trimmed_after - trimmed_before >= uint64_t(burst));
}

TEST_CASE("pids are never reused for another process: a send to a stale pid is dropped", "[spawn][pid]") {
  unsigned workers = HERD_WORKERS();
  const int rounds = int(herd::test::scaled(3000, 1000));
  std::set<herd::pid> seen;
  bool distinct = true, index_reused = false;
  std::size_t stray = 99;
  herd::node_options o = herd::test::opts(workers);
  o.max_actors = 100;
  auto r = run_node(o, [&] {
    herd::pid me = herd::self();
    std::set<uint32_t> indexes;
    std::vector<herd::pid> stale;
    for (int i = 0; i < rounds; ++i) {
      herd::pid p = herd::spawn([me] { herd::receive([me](stop) { herd::send(me, done{0}); }); });
      if (!seen.insert(p).second) distinct = false;
      if (!indexes.insert(p.index).second) index_reused = true;
      herd::send(p, stop{});
      herd::receive([](done) {});
      stale.push_back(p);
      if (i % 64 == 63) herd::test::wait_live(1);
    }
    herd::test::wait_live(1);
    // A long-lived process, probably on a slot some stale pid had: it must not
    // get their messages.
    herd::pid keeper = herd::spawn([me] {
      herd::receive([](stop) {});
      // Anything sent to the stale pids before stop would be queued ahead of it.
      herd::send(me, result{long(herd::mailbox_size())});
    });
    for (herd::pid p : stale) herd::send(p, 1);
    herd::send(keeper, stop{});
    stray = std::size_t(herd::receive([](result x) { return x.v; }));
  });
  CHECK(r.is_normal());
  CHECK(distinct);
  CHECK(index_reused);
  CHECK(stray == 0);
  CHECK(seen.size() == std::size_t(rounds));
}

// A regression test: slots of exited processes must come back at once (an
// earlier version held them for a reclamation grace period, so a
// spawn-and-reap loop failed with "max_actors processes are alive" while 1 was).
TEST_CASE("spawn does not fail while far fewer than max_actors processes are alive", "[spawn][limits]") {
  unsigned workers = HERD_WORKERS();
  const int rounds = int(herd::test::scaled(3000, 1500));
  int failed_at = -1;
  std::size_t live_at_failure = 0;
  std::string what;
  herd::node_options o = herd::test::opts(workers);
  o.max_actors = 100;
  auto r = run_node(o, [&] {
    herd::pid me = herd::self();
    for (int i = 0; i < rounds; ++i) {
      herd::pid p;
      try {
        p = herd::spawn([me] { herd::receive([me](stop) { herd::send(me, done{0}); }); });
      } catch (const herd::spawn_error& e) {
        failed_at = i;
        live_at_failure = herd::current_node_stats().live_processes;
        what = e.what();
        return;
      }
      herd::send(p, stop{});
      herd::receive([](done) {});    // the child is exiting (or gone)
      if (i % 64 == 63) herd::sleep(1ms);  // a pause: idle workers park
    }
  });
  CHECK(r.is_normal());
  INFO("spawn #" << failed_at << " failed with " << live_at_failure << " processes alive: " << what);
  CHECK(failed_at == -1);
}

TEST_CASE("a pid prints as <index.generation>", "[pid]") {
  herd::pid p{12, 3};
  CHECK(p.to_string() == "<12.3>");
  std::ostringstream os;
  os << p;
  CHECK(os.str() == "<12.3>");
  CHECK_FALSE(herd::no_pid.valid());
  CHECK(herd::self() == herd::no_pid);  // not in a process
}
