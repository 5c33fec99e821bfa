// Links, monitors and deferred replies in numbers: one process holding
// thousands of relations, changed back and forth, still sees Erlang's
// semantics — every live link delivers its exit once, an unlinked one none,
// every live monitor one down, a demonitored one none, a server's deferred
// replies leave no monitor behind. (How fast is actorbench's business:
// forkjoin_monitor, links, monitors, deferred_calls.)
#include <herd/actors.hpp>
#include <herd/actors/introspect.hpp>

#include <catch2/catch.hpp>

#include "support/node_fixture.hpp"
#include "support/scale.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

using namespace std::chrono_literals;
using herd::test::run_node;

namespace relations_test_msgs {
struct stop {};
struct die {};
struct req {
  int i;
};
struct all_waiting {};
}  // namespace relations_test_msgs

using namespace relations_test_msgs;

namespace {

void idle_until_told() {
  herd::receive([](stop) {}, [](die) { herd::exit(herd::exit_reason::error("die", "told to")); });
}

std::size_t many() { return herd::test::scaled(10'000, 2'000); }

}  // namespace

TEST_CASE("exits reach a trapping process from every one of 10,000 links, once each", "[relations]") {
  unsigned workers = HERD_WORKERS();
  const std::size_t n = many();
  std::size_t exits = 0, distinct = 0, wrong_reason = 0, extra = 0;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::trap_exit(true);
    std::vector<herd::pid> kids;
    for (std::size_t i = 0; i < n; ++i) kids.push_back(herd::spawn_link(idle_until_told));
    for (std::size_t i = 0; i < n; i += 3) herd::link(kids[i]);  // already linked: still one link
    for (herd::pid p : kids) herd::send(p, die{});
    std::set<herd::pid> from;
    for (std::size_t i = 0; i < n; ++i)
      herd::receive([&](herd::exit_msg&& e) {
        ++exits;
        from.insert(e.from);
        wrong_reason += e.reason != herd::exit_reason::error("die", "told to");
      });
    distinct = from.size();
    extra = herd::receive([](herd::exit_msg&&) { return 1; }, herd::after(50ms, [] { return 0; }));
  });
  CHECK(r.is_normal());
  CHECK(exits == n);
  CHECK(distinct == n);
  CHECK(wrong_reason == 0);
  CHECK(extra == 0);
}

TEST_CASE("after link and unlink churn over thousands of processes only the links left in place deliver exits",
          "[relations]") {
  unsigned workers = HERD_WORKERS();
  const std::size_t n = many();
  std::size_t wrong = 0, missing = 0;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::trap_exit(true);
    std::vector<herd::pid> kids;
    std::vector<herd::monitor_ref> refs;
    for (std::size_t i = 0; i < n; ++i) {
      kids.push_back(herd::spawn(idle_until_told));
      refs.push_back(herd::monitor(kids.back()));
      herd::link(kids.back());
    }
    // Linked in the end: i % 4 == 0 (never unlinked) and i % 4 == 2 (unlinked,
    // then linked again); i odd: unlinked (twice for i % 4 == 3).
    for (std::size_t i = 1; i < n; i += 2) herd::unlink(kids[i]);
    for (std::size_t i = 2; i < n; i += 4) {
      herd::unlink(kids[i]);
      herd::link(kids[i]);
    }
    for (std::size_t i = 3; i < n; i += 4) herd::unlink(kids[i]);
    for (herd::pid p : kids) herd::send(p, die{});
    // A process's exit signal goes out before its down: once every down is
    // in, every exit message that is coming is in too.
    std::map<herd::pid, int> exits;
    std::size_t downs = 0;
    while (downs < n)
      herd::receive([&](herd::exit_msg&& e) { ++exits[e.from]; }, [&](herd::down&&) { ++downs; });
    for (std::size_t i = 0; i < n; ++i) {
      bool linked = i % 2 == 0;
      auto it = exits.find(kids[i]);
      int got = it == exits.end() ? 0 : it->second;
      missing += linked && got != 1;
      wrong += !linked && got != 0;
    }
  });
  CHECK(r.is_normal());
  CHECK(missing == 0);
  CHECK(wrong == 0);
}

TEST_CASE("after monitor and demonitor churn over thousands of processes each live monitor gives one down",
          "[relations]") {
  unsigned workers = HERD_WORKERS();
  const std::size_t n = many();
  std::size_t unexpected = 0, missing = 0, demonitor_said_inactive = 0, noproc_ok = 0;
  auto r = run_node(herd::test::opts(workers), [&] {
    std::vector<herd::pid> kids;
    std::set<herd::monitor_ref> live;
    std::vector<herd::monitor_ref> first;
    for (std::size_t i = 0; i < n; ++i) {
      kids.push_back(herd::spawn(idle_until_told));
      first.push_back(herd::monitor(kids.back()));
      live.insert(first.back());
    }
    // Odd ones demonitored; every third monitored a second time (monitors stack).
    for (std::size_t i = 1; i < n; i += 2) {
      demonitor_said_inactive += !herd::demonitor(first[i]);
      live.erase(first[i]);
    }
    for (std::size_t i = 0; i < n; i += 3) live.insert(herd::monitor(kids[i]));
    // A monitor on a process that has ended: noproc, among all the live ones.
    auto [gone, gone_ref] = herd::spawn_monitor([] {});
    herd::receive(herd::when([r = gone_ref](const herd::down& d) { return d.ref == r; }, [](herd::down&&) {}));
    herd::monitor_ref late = herd::monitor(gone);
    for (herd::pid p : kids) herd::send(p, die{});
    std::size_t expected = live.size();
    for (std::size_t got = 0; got < expected + 1;) {
      auto d = herd::receive([](herd::down&& d) { return std::optional<herd::down>(std::move(d)); },
                             herd::after(5s, [] { return std::optional<herd::down>(); }));
      if (!d) break;
      ++got;
      if (d->ref == late) {
        noproc_ok += d->reason == herd::exit_reason::noproc() && d->who == gone;
      } else if (!live.erase(d->ref)) {
        ++unexpected;
      }
    }
    missing = live.size();
    unexpected += herd::receive([](herd::down&&) { return 1; }, herd::after(50ms, [] { return 0; }));
  });
  CHECK(r.is_normal());
  CHECK(demonitor_said_inactive == 0);
  CHECK(missing == 0);
  CHECK(unexpected == 0);
  CHECK(noproc_ok == 1);
}

TEST_CASE("demonitor of a monitor whose down is already filed among thousands drops that down and no other",
          "[relations]") {
  unsigned workers = HERD_WORKERS();
  const std::size_t n = many();
  std::size_t downs = 0, dropped_seen = 0;
  bool demonitor_result = true;
  auto r = run_node(herd::test::opts(workers), [&] {
    std::vector<herd::monitor_ref> refs;
    for (std::size_t i = 0; i < n; ++i) refs.push_back(herd::spawn_monitor([] {}).second);
    herd::test::wait_live(1);
    herd::monitor_ref flushed = refs[n / 2];
    herd::receive([](int) {}, herd::after(0ms));  // files every down that came in
    demonitor_result = herd::demonitor(flushed);
    for (;;) {
      bool got = herd::receive(
          [&](herd::down&& d) {
            dropped_seen += d.ref == flushed;
            return true;
          },
          herd::after(200ms, [] { return false; }));
      if (!got) break;
      ++downs;
    }
  });
  CHECK(r.is_normal());
  CHECK_FALSE(demonitor_result);  // it had fired: no longer active
  CHECK(downs == n - 1);
  CHECK(dropped_seen == 0);
}

TEST_CASE("a server holding thousands of deferred calls answers them all and keeps no monitor of its callers",
          "[relations]") {
  unsigned workers = HERD_WORKERS();
  const std::size_t n = many();
  std::size_t answered = 0, downs_from_callers = 0;
  herd::introspect::relations after{};
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    herd::pid server = herd::spawn([me, n] {
      std::vector<herd::from> waiting;
      while (waiting.size() < n) herd::receive([&](herd::call_request<req>&& c) { waiting.push_back(c.from); });
      herd::send(me, all_waiting{});
      // Answered from the back: each reply finds its caller's monitor by ref.
      while (!waiting.empty()) {
        herd::reply(waiting.back(), waiting.back().ref);
        waiting.pop_back();
      }
      herd::receive([](stop) {});
    });
    for (std::size_t i = 0; i < n; ++i)
      herd::spawn([server, me, i] {
        herd::call<uint64_t>(server, req{int(i)}, herd::infinity);
        herd::send(me, req{int(i)});
      });
    herd::receive([](all_waiting) {});
    for (std::size_t i = 0; i < n; ++i) herd::receive([&](req) { ++answered; });
    herd::test::wait_live(2);
    // Asked from a plain thread (the blocking pool), as the observer does.
    after = herd::blocking([server] { return herd::introspect::ask_relations(server, 5s); })
                .value_or(herd::introspect::relations{});
    herd::monitor_ref ref = herd::monitor(server);
    herd::send(server, stop{});
    herd::receive(herd::when([ref](const herd::down& d) { return d.ref == ref; }, [](herd::down&&) {}));
    downs_from_callers = herd::mailbox_size();
    herd::receive([](herd::down&&) {}, herd::after(0ms));
  });
  CHECK(r.is_normal());
  CHECK(answered == n);
  CHECK(after.answered);
  CHECK(after.monitored_by.empty());
  CHECK(downs_from_callers == 0);
}
