// The stampede (after Ranch's stampede_SUITE): a three-level tree — a top
// supervisor, mid supervisors, leaf supervisors, workers — under random
// kills of workers and supervisors for a bounded time. Afterwards the tree
// must be whole (every child present and alive, as its spec says), the
// process count exactly the tree's, and once it is stopped nothing may be
// left: no process, no stack, no message.
#include "sup_fixtures.hpp"

#include <herd/runtime/runtime.hpp>

#include <catch2/catch.hpp>

#include <random>

using namespace sup_test;

namespace {

struct shape {
  std::size_t mids, leaves, workers;  // per parent
  std::size_t total_workers() const { return mids * leaves * workers; }
  std::size_t total_processes() const { return 1 + mids + mids * leaves + total_workers(); }  // without the root
};

std::string numbered(const char* prefix, std::size_t i) {
  std::string s(prefix);  // (not "w" + to_string(i): GCC 12 warns falsely about it)
  s += std::to_string(i);
  return s;
}

constexpr sup::restart_strategy strategies[] = {sup::one_for_one, sup::rest_for_one, sup::one_for_all};

sup::child_spec leaf(std::size_t m, std::size_t l, const shape& sh) {
  std::vector<sup::child_spec> ws;
  ws.reserve(sh.workers);
  for (std::size_t w = 0; w < sh.workers; ++w)
    ws.push_back({.id = numbered("w", w),
                  .start = worker,
                  .restart = w % 3 == 2 ? sup::transient : sup::permanent,
                  .shutdown = w % 2 ? sup::shutdown_spec(sup::brutal_kill) : sup::shutdown_spec(1000ms)});
  // Leaves give up now and then under the stampede: their mid supervisor restarts them.
  return sup::supervisor_spec(numbered("leaf", l),
                              {.strategy = strategies[(m + l) % 3], .intensity = 25, .period = 1s}, std::move(ws));
}

sup::child_spec mid(std::size_t m, const shape& sh) {
  std::vector<sup::child_spec> ls;
  for (std::size_t l = 0; l < sh.leaves; ++l) ls.push_back(leaf(m, l, sh));
  return sup::supervisor_spec(numbered("mid", m),
                              {.strategy = strategies[m % 3], .intensity = 100000, .period = 1s}, std::move(ls));
}

struct targets {
  std::vector<herd::pid> mids, leaves, workers;
};

// From a process: the tree as it is now (supervisors that are busy dying are skipped).
targets walk(herd::pid top) {
  targets t;
  auto children = [](herd::pid s) {
    try {
      return sup::which_children(s);
    } catch (const herd::call_error&) {
      return std::vector<sup::child_info>{};
    }
  };
  for (auto& m : children(top)) {
    if (!m.pid) continue;
    t.mids.push_back(m.pid);
    for (auto& l : children(m.pid)) {
      if (!l.pid) continue;
      t.leaves.push_back(l.pid);
      for (auto& w : children(l.pid))
        if (w.pid) t.workers.push_back(w.pid);
    }
  }
  return t;
}

// From a process: every child of every supervisor present, running and alive.
bool whole(herd::pid top, const shape& sh, std::string& why) {
  try {
    auto check = [&](herd::pid s, std::size_t n, const char* level) {
      auto cs = sup::which_children(s);
      auto cnt = sup::count_children(s);
      if (cs.size() != n || cnt.specs != n || cnt.active != n) {
        why = std::string(level) + " " + s.to_string() + " has " + std::to_string(cnt.active) + " of " +
              std::to_string(n) + " children running";
        return std::vector<sup::child_info>{};
      }
      for (auto& c : cs)
        if (!c.pid || c.restarting || !alive(c.pid)) {
          why = std::string(level) + " child " + c.id + " not alive";
          return std::vector<sup::child_info>{};
        }
      return cs;
    };
    auto ms = check(top, sh.mids, "top");
    if (ms.empty()) return false;
    for (auto& m : ms) {
      auto ls = check(m.pid, sh.leaves, "mid");
      if (ls.empty()) return false;
      for (auto& l : ls)
        if (check(l.pid, sh.workers, "leaf").empty()) return false;
    }
  } catch (const herd::call_error& e) {
    why = e.what();
    return false;
  }
  return true;
}

}  // namespace

TEST_CASE("stampede: random kills of workers and supervisors in a three-level tree leave it whole, with nothing "
          "leaked",
          "[supervisor][stampede]") {
  const shape sh{10, 10, herd::test::scaled(100, 10)};
  const auto kill_for = std::chrono::milliseconds(herd::test::scaled(3000, 1500));
  std::size_t kills = 0, sup_kills = 0, walks = 0;
  std::size_t live_during = 0, expected_live = sh.total_processes() + 1;
  bool is_whole = false, stopped = false;
  std::string why;
  double start_ms = 0, settle_ms = 0, stop_ms = 0;

  std::ptrdiff_t messages_before = herd::node::live_messages();
  herd::node n(herd::test::opts(2));
  auto r = n.run([&] {
    auto t0 = herd::test::clk::now();
    std::vector<sup::child_spec> ms;
    for (std::size_t m = 0; m < sh.mids; ++m) ms.push_back(mid(m, sh));
    auto top = sup::start_link({.strategy = sup::one_for_one, .intensity = 1000000, .period = 1s, .name = "stampede_top"},
                               std::move(ms));
    start_ms = herd::test::ms_since(t0);

    std::mt19937 rng(20240611);
    auto pick = [&](const std::vector<herd::pid>& v) { return v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng)]; };
    targets t = walk(*top);
    auto last_walk = herd::test::clk::now();
    auto until = herd::test::clk::now() + kill_for;
    while (herd::test::clk::now() < until) {
      if (herd::test::clk::now() - last_walk > 50ms || t.workers.empty()) {
        t = walk(*top);
        last_walk = herd::test::clk::now();
        ++walks;
      }
      for (int k = 0; k < 10; ++k) {
        unsigned dice = std::uniform_int_distribution<unsigned>(0, 999)(rng);
        if (dice < 2 && !t.mids.empty()) {
          herd::exit(pick(t.mids), herd::exit_reason::kill());
          ++sup_kills;
        } else if (dice < 25 && !t.leaves.empty()) {
          herd::exit(pick(t.leaves), dice % 2 ? herd::exit_reason::kill() : herd::exit_reason::error("stampede", "boom"));
          ++sup_kills;
        } else if (!t.workers.empty()) {
          herd::pid w = pick(t.workers);
          if (dice % 3 == 0) herd::send(w, crash{});
          else herd::exit(w, dice % 3 == 1 ? herd::exit_reason::kill() : herd::exit_reason::error("stampede", "boom"));
        }
        ++kills;
      }
      herd::sleep(1ms);
    }

    auto t1 = herd::test::clk::now();
    is_whole = herd::test::eventually([&] { return whole(*top, sh, why); }, 20000ms);
    herd::test::eventually([&] { return herd::current_node_stats().live_processes == expected_live; }, 5000ms);
    live_during = herd::current_node_stats().live_processes;
    settle_ms = herd::test::ms_since(t1);

    auto t2 = herd::test::clk::now();
    stopped = sup::stop(*top).ok();
    herd::test::wait_live(1);
    stop_ms = herd::test::ms_since(t2);
  });
  WARN("stampede: " << sh.total_workers() << " workers; " << kills << " kills (" << sup_kills
                    << " of supervisors) in " << kill_for.count() << " ms; start " << start_ms << " ms, settle "
                    << settle_ms << " ms, stop " << stop_ms << " ms; " << walks << " walks; "
                    << n.stats().spawned << " processes spawned in all");
  CHECK(r.is_normal());
  INFO(why);
  CHECK(is_whole);
  CHECK(live_during == expected_live);
  CHECK(stopped);
  INFO("live messages before: " << messages_before);
  CHECK(herd::node::live_messages() == 0);
  CHECK(n.runtime().metrics().stacks_in_use == 0);
  herd::node_stats st = n.stats();
  CHECK(st.live_processes == 0);
  CHECK(st.spawned == st.exited);
}
