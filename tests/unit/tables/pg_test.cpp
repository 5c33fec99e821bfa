// herd::pg, OTP's process groups, case by case.
#include <herd/tables/pg.hpp>

#include "support/node_fixture.hpp"
#include "support/scale.hpp"

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

using herd::test::opts;
using herd::test::run_node;
namespace pg = herd::pg;

namespace {
struct stop {};
struct ping {
  int n;
};
// A member that counts pings until told to stop, then reports the count.
void member(herd::pid report) {
  int got = 0;
  for (;;) {
    bool more = herd::receive([&](ping) { return ++got, true; }, [](stop) { return false; });
    if (!more) break;
  }
  herd::send(report, got);
}
}  // namespace

TEST_CASE("pg: join twice lists twice and needs two leaves, leave of a non-member is not_joined") {
  std::vector<std::size_t> sizes;
  bool not_joined = false, gone_from_which = false;
  std::size_t groups_left = 99;
  run_node(opts(2), [&] {
    herd::pid me = herd::self();
    pg::join("s1", "g", me);
    pg::join("s1", "g", me);
    sizes.push_back(pg::get_members("s1", "g").size());  // 2
    (void)pg::leave("s1", "g", me);
    sizes.push_back(pg::get_members("s1", "g").size());  // 1
    (void)pg::leave("s1", "g", me);
    sizes.push_back(pg::get_members("s1", "g").size());  // 0
    not_joined = pg::leave("s1", "g", me).code() == herd::tables::errc::not_joined;
    auto groups = pg::which_groups("s1");
    gone_from_which = std::find(groups.begin(), groups.end(), "g") == groups.end();
    // short-lived groups do not pile up: a thousand joined and left leave nothing behind
    for (int i = 0; i < 1000; ++i) {
      pg::join("s1", "room:" + std::to_string(i), me);
      (void)pg::leave("s1", "room:" + std::to_string(i), me);
    }
    groups_left = herd::pg::detail::group_count("s1");
  });
  CHECK(sizes == std::vector<std::size_t>{2, 1, 0});
  CHECK(groups_left == 0);
  CHECK(not_joined);
  CHECK(gone_from_which);
}

TEST_CASE("pg: a member that ends leaves every group, and the group's monitor hears join and leave") {
  std::vector<std::string> events;
  std::size_t after_exit = 99, scope_groups_at_start = 99;
  run_node(opts(2), [&] {
    herd::pid me = herd::self();
    auto sm = pg::monitor_scope("s2");
    scope_groups_at_start = sm.groups.size();
    auto gm = pg::monitor("s2", "room");
    herd::pid m = herd::spawn(member, me);
    pg::join("s2", "room", m);
    pg::join("s2", "other", m);
    auto mon = herd::monitor(m);
    herd::send(m, stop{});
    herd::receive([](int) {});
    herd::receive([](const herd::down&) {});
    after_exit = pg::get_members("s2", "room").size() + pg::get_members("s2", "other").size();
    // scope monitor: join room, join other, then two leaves; group monitor: join and leave of room
    for (int i = 0; i < 6; ++i)
      herd::receive([&](pg::event& e) {
        events.push_back(std::string(e.ref == gm.ref ? "group " : "scope ") +
                         (e.kind == pg::event::join ? "join " : "leave ") + e.group);
      });
    CHECK(pg::demonitor("s2", gm.ref));
    CHECK_FALSE(pg::demonitor("s2", gm.ref));
    (void)mon, (void)sm;
  });
  CHECK(after_exit == 0);
  CHECK(scope_groups_at_start == 0);
  std::sort(events.begin(), events.end());
  CHECK(events == std::vector<std::string>{"group join room", "group leave room", "scope join other",
                                           "scope join room", "scope leave other", "scope leave room"});
}

TEST_CASE("pg: send reaches every member once per join, and get_members shares one snapshot until a change") {
  int total = 0;
  bool same_snapshot = false, new_after_change = false;
  run_node(opts(2), [&] {
    herd::pid me = herd::self();
    std::vector<herd::pid> ms;
    for (int i = 0; i < 50; ++i) ms.push_back(herd::spawn(member, me));
    pg::join("s3", "all", ms);
    pg::join("s3", "all", ms[0]);  // twice: two copies
    auto a = pg::get_members("s3", "all");
    auto b = pg::get_members("s3", "all");
    same_snapshot = a.begin() == b.begin();
    CHECK(pg::send("s3", "all", ping{1}) == 51);
    pg::join("s3", "all", me);
    new_after_change = pg::get_members("s3", "all").begin() != a.begin() && a.size() == 51;
    (void)pg::leave("s3", "all", me);
    for (herd::pid p : ms) herd::send(p, stop{});
    for (int i = 0; i < 50; ++i) total += herd::receive([](int n) { return n; });
  });
  CHECK(same_snapshot);
  CHECK(new_after_change);
  CHECK(total == 51);
}

TEST_CASE("pg: joining a process that has ended adds nothing, a monitoring process that ends drops its monitor") {
  std::size_t members = 99;
  bool dropped = false;
  run_node(opts(2), [&] {
    herd::pid gone = herd::spawn([] {});
    auto m = herd::monitor(gone);
    herd::receive([](const herd::down&) {});
    pg::join("s4", "g", gone);
    members = pg::get_members("s4", "g").size();
    herd::pid me = herd::self();
    herd::pid watcher = herd::spawn([me] { herd::send(me, pg::monitor("s4", "g").ref); });
    auto ref = herd::receive([](herd::monitor_ref r) { return r; });
    auto wm = herd::monitor(watcher);
    herd::receive([](const herd::down&) {});
    dropped = !pg::demonitor("s4", ref);  // already gone with its process
    (void)m, (void)wm;
  });
  CHECK(members == 0);
  CHECK(dropped);
}

TEST_CASE("pg: from a plain thread join, get_members and send work, a monitor is not_in_process") {
  std::size_t seen = 0;
  std::string refused;
  run_node(opts(2), [&] {
    herd::pid me = herd::self();
    std::thread t([&] {
      pg::join("s5", "g", me);
      seen = pg::get_members("s5", "g").size();
      pg::send("s5", "g", ping{7});
      try {
        (void)pg::monitor("s5", "g");
      } catch (const herd::not_in_process& e) {
        refused = e.call();
      }
    });
    herd::blocking([&] { t.join(); });  // the wait off the worker, as any blocking call
    herd::receive([](ping) {});
    (void)pg::leave("s5", "g", me);
  });
  CHECK(seen == 1);
  CHECK(refused == "herd::pg::monitor");
}

TEST_CASE("pg: members join and leave in any order, duplicates included, and get_members always lists exactly who is in") {
  // The group's index moves the last entry into a leaver's place: checked
  // against a plain count per pid after every change.
  std::size_t mismatches = 0, checks = 0, big_left = 99;
  run_node(opts(2), [&] {
    std::vector<herd::pid> ps;
    for (int i = 0; i < 40; ++i) ps.push_back(herd::spawn([] { herd::receive([](stop) {}); }));
    std::map<herd::pid, int> want;
    std::mt19937 rng(7);
    const int ops = static_cast<int>(herd::test::scaled(20000, 3000));
    for (int k = 0; k < ops; ++k) {
      herd::pid p = ps[rng() % ps.size()];
      if (rng() % 2 == 0 && want[p] < 3) {
        pg::join("s_idx", "g", p);
        ++want[p];
      } else if (want[p] > 0) {
        if (!pg::leave("s_idx", "g", p)) ++mismatches;
        --want[p];
      } else if (pg::leave("s_idx", "g", p)) {
        ++mismatches;  // a leave of a non-member must be not_joined
      }
      auto got = pg::get_members("s_idx", "g");
      std::vector<herd::pid> have(got.begin(), got.end()), expect;
      for (auto& [q, n] : want) expect.insert(expect.end(), static_cast<std::size_t>(n), q);
      std::sort(have.begin(), have.end());
      if (have != expect) ++mismatches;
      ++checks;
    }
    // A big group emptied one member at a time (a leave is O(1)).
    const std::size_t n = herd::test::scaled(200000, 20000);
    std::vector<herd::pid> many;
    for (std::size_t i = 0; i < n; ++i) many.push_back(ps[i % ps.size()]);
    pg::join("s_idx", "big", many);
    for (std::size_t i = 0; i < n; ++i)
      if (!pg::leave("s_idx", "big", many[i])) ++mismatches;
    big_left = pg::get_members("s_idx", "big").size();
    for (herd::pid p : ps) herd::send(p, stop{});
  });
  CHECK(checks > 0);
  CHECK(mismatches == 0);
  CHECK(big_left == 0);
}
