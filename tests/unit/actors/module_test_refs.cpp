// Hot code loading: what keeps a module version loaded besides its handlers —
// a message its code made (in a mailbox, or in a send_after timer), a
// hibernate continuation its code made — and purge, which kills the
// processes still running an old version. Checked in /proc/self/maps.
#include <herd/actors.hpp>
#include <herd/actors/module.hpp>

#include <catch2/catch.hpp>

#include "greeter_api.hpp"
#include "module_sandbox.hpp"
#include "support/node_fixture.hpp"

#include <algorithm>
#include <atomic>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using herd::test::run_node;
using module_fixture::greeter;
using module_fixture::info;
using module_fixture::mapped;
using module_fixture::sandbox;
using module_fixture::wait_for;
namespace modules = herd::modules;

namespace module_refs_test {
struct go {};
struct ready {};
struct got_note {
  std::string text;
  std::string version;
};
struct switched {  // a watcher took a code_changed and upgraded
  std::string version;
};
struct had_notice {
  bool got;
};
}  // namespace module_refs_test
using namespace module_refs_test;

namespace {

// Inside a node body (not the test thread): a failed step ends the root
// process with an error reason that the test then shows.
void must(const modules::result<modules::loaded>& r) {
  if (!r) throw std::runtime_error("load/unload failed: " + r.error().message());
}
void must(bool ok) {
  if (!ok) throw std::runtime_error("a step inside the node failed");
}

// A long-lived host process: on `go`, takes one msgs::note from its mailbox
// and reports it to `to`.
void consumer(herd::pid to) {
  herd::receive([](go) {});
  herd::receive([&](const module_fixture::msgs::note& n) { herd::send(to, got_note{n.text, n.version}); });
}

}  // namespace

TEST_CASE("a message made by v1 keeps v1 loaded while it waits in a host process's mailbox", "[modules]") {
  sandbox s;
  bool loaded_v2 = false, mapped_while_queued = false, unmapped_after = false;
  int refs_while_queued = 0;
  got_note got;
  auto r = run_node(herd::test::opts(2), [&] {
    must(modules::load(s.deploy("greeter_v1", "greeter.so")));
    std::string v1 = info("greeter", "1").staged_path;
    herd::pid c = herd::spawn(consumer, herd::self());
    {
      auto h = modules::create<greeter>("greeter");
      h->send_note(c, "hello from v1");
    }  // the handler is gone; the message is not
    loaded_v2 = static_cast<bool>(modules::load(s.deploy("greeter_v2", "greeter.so")));
    herd::sleep(20ms);
    mapped_while_queued = mapped(v1);
    refs_while_queued = static_cast<int>(info("greeter", "1").refs);
    herd::send(c, go{});
    herd::receive([&](got_note g) { got = g; });
    unmapped_after = wait_for([&] { return !mapped(v1); });
    (void)modules::unload("greeter");
  });
  INFO(r.to_string());
  CHECK(r.is_normal());
  CHECK(loaded_v2);
  CHECK(mapped_while_queued);
  CHECK(refs_while_queued == 1);
  CHECK(got.text == "hello from v1");
  CHECK(got.version == "1");
  CHECK(unmapped_after);
}

TEST_CASE("a send_after timer set by v1 keeps v1 loaded until its message is consumed or the timer cancelled", "[modules]") {
  sandbox s;
  bool mapped_while_armed = false, unmapped_after_fire = false;
  bool mapped_while_armed2 = false, unmapped_after_cancel = false, cancelled = false;
  got_note got;
  auto r = run_node(herd::test::opts(2), [&] {
    // Fired and consumed.
    must(modules::load(s.deploy("greeter_v1", "greeter.so")));
    std::string v1 = info("greeter", "1").staged_path;
    herd::pid c = herd::spawn(consumer, herd::self());
    {
      auto h = modules::create<greeter>("greeter");
      h->remind(c, 150ms);
    }
    must(modules::load(s.deploy("greeter_v2", "greeter.so")));
    mapped_while_armed = mapped(v1);
    herd::send(c, go{});
    herd::receive([&](got_note g) { got = g; });
    unmapped_after_fire = wait_for([&] { return !mapped(v1); });

    // Cancelled: the message is dropped with the timer.
    must(modules::unload("greeter"));
    must(wait_for([] { return module_fixture::loaded_versions() == 0; }));
    must(modules::load(s.deploy("greeter_v1", "greeter.so")));
    std::string v1b = info("greeter", "1").staged_path;
    herd::timer_ref t;
    {
      auto h = modules::create<greeter>("greeter");
      t = h->remind(herd::self(), 10s);
    }
    must(modules::load(s.deploy("greeter_v2", "greeter.so")));
    mapped_while_armed2 = mapped(v1b);
    cancelled = herd::cancel_timer(t);
    unmapped_after_cancel = wait_for([&] { return !mapped(v1b); });
    (void)modules::unload("greeter");
  });
  INFO(r.to_string());
  CHECK(r.is_normal());
  CHECK(mapped_while_armed);
  CHECK(got.text == "reminder");
  CHECK(unmapped_after_fire);
  CHECK(mapped_while_armed2);
  CHECK(cancelled);
  CHECK(unmapped_after_cancel);
}

TEST_CASE("a hibernate continuation made by v1 keeps v1 loaded until it has run", "[modules]") {
  sandbox s;
  std::atomic<int> woke{0};
  bool mapped_while_hibernated = false, unmapped_after = false;
  auto r = run_node(herd::test::opts(2), [&] {
    must(modules::load(s.deploy("greeter_v1", "greeter.so")));
    std::string v1 = info("greeter", "1").staged_path;
    herd::pid me = herd::self();
    herd::pid p = herd::spawn([&woke, me]() -> herd::hibernation {
      auto h = modules::create<greeter>("greeter");
      herd::hibernation c = h->park(&woke);
      h.reset();  // only the continuation is left of v1
      herd::send(me, ready{});
      return c;
    });
    herd::receive([](ready) {});
    must(modules::load(s.deploy("greeter_v2", "greeter.so")));
    herd::sleep(20ms);
    mapped_while_hibernated = mapped(v1);
    herd::send(p, module_fixture::msgs::note{"wake", "host"});  // a host-made message
    unmapped_after = wait_for([&] { return !mapped(v1); });
    (void)modules::unload("greeter");
  });
  INFO(r.to_string());
  CHECK(r.is_normal());
  CHECK(mapped_while_hibernated);
  CHECK(woke == 1);
  CHECK(unmapped_after);
}

TEST_CASE("a process spawned by v1's code keeps v1 loaded until it ends", "[modules]") {
  sandbox s;
  bool started = false, mapped_while_running = false, unmapped_after = false;
  auto r = run_node(herd::test::opts(2), [&] {
    must(modules::load(s.deploy("greeter_v1", "greeter.so")));
    std::string v1 = info("greeter", "1").staged_path;
    herd::pid me = herd::self();
    herd::pid worker;
    {
      auto h = modules::create<greeter>("greeter");
      worker = h->spawn_worker(me);
    }  // the handler is gone: only the process runs v1's code now
    herd::receive([&](const module_fixture::msgs::note& n) { started = n.text == "started" && n.version == "1"; });
    herd::monitor(worker);
    must(modules::load(s.deploy("greeter_v2", "greeter.so")));
    herd::sleep(20ms);
    mapped_while_running = mapped(v1);
    herd::send(worker, module_fixture::msgs::note{"stop", "host"});
    herd::receive([](const herd::down&) {});
    unmapped_after = wait_for([&] { return !mapped(v1); });
    (void)modules::unload("greeter");
  });
  INFO(r.to_string());
  CHECK(r.is_normal());
  CHECK(started);
  CHECK(mapped_while_running);
  CHECK(unmapped_after);
}

TEST_CASE("purge kills the processes still running the old version and then loads the new one", "[modules]") {
  sandbox s;
  std::vector<herd::exit_kind> downs;
  bool refused_soft = false, loaded_with_purge = false, unmapped_after = false, v3_current = false;
  std::string purge_error;
  auto r = run_node(herd::test::opts(2), [&] {
    must(modules::load(s.deploy("greeter_v1", "greeter.so")));
    std::string v1 = info("greeter", "1").staged_path;
    herd::pid me = herd::self();
    std::vector<herd::pid> runners;
    for (int i = 0; i < 3; ++i) {
      herd::pid p = herd::spawn([me] {
        auto h = modules::create<greeter>("greeter");
        h->greet("x");
        herd::send(me, ready{});
        herd::receive([](go) {});  // runs v1 until killed
      });
      herd::monitor(p);
      runners.push_back(p);
    }
    for (int i = 0; i < 3; ++i) herd::receive([](ready) {});
    must(modules::load(s.deploy("greeter_v2", "greeter.so")));
    refused_soft = modules::load(s.deploy("greeter_v3", "greeter.so")).code() == modules::errc::old_version_in_use;
    modules::load_options o;
    o.purge = modules::purge_mode::kill;
    auto lr = modules::load(s.deploy("greeter_v3", "greeter.so"), o);
    loaded_with_purge = static_cast<bool>(lr);
    purge_error = module_fixture::why(lr);
    for (int i = 0; i < 3; ++i) herd::receive([&](const herd::down& d) { downs.push_back(d.reason.kind()); });
    unmapped_after = wait_for([&] { return !mapped(v1); });
    v3_current = info("greeter", "3").state == "current";
    (void)modules::unload("greeter");
  });
  INFO(r.to_string());
  CHECK(r.is_normal());
  CHECK(refused_soft);
  INFO(purge_error);
  CHECK(loaded_with_purge);
  REQUIRE(downs.size() == 3);
  for (auto k : downs) CHECK(k == herd::exit_kind::killed);
  CHECK(unmapped_after);
  CHECK(v3_current);
}

TEST_CASE("introspection lists each version with its state, references and the processes running it", "[modules]") {
  sandbox s;
  modules::version_info v1, v2;
  herd::pid runner;
  auto r = run_node(herd::test::opts(1), [&] {
    must(modules::load(s.deploy("greeter_v1", "greeter.so")));
    herd::pid me = herd::self();
    runner = herd::spawn([me] {
      auto h = modules::create<greeter>("greeter");
      herd::send(me, ready{});
      herd::receive([](go) {});
    });
    herd::receive([](ready) {});
    must(modules::load(s.deploy("greeter_v2", "greeter.so")));
    v1 = info("greeter", "1");
    v2 = info("greeter", "2");
    herd::send(runner, go{});
    wait_for([] { return info("greeter", "1").state.empty(); });
    (void)modules::unload("greeter");
  });
  INFO(r.to_string());
  CHECK(r.is_normal());
  CHECK(v1.state == "old");
  CHECK(v1.refs == 1);
  REQUIRE(v1.actors.size() == 1);
  CHECK(v1.actors[0] == runner);
  CHECK(v2.state == "current");
  CHECK(v2.refs == 1);
  CHECK(v2.actors.empty());
  CHECK(v2.upgrade_from == std::vector<std::string>{"1", "1n"});
}

TEST_CASE("a watched handler's owner gets code_changed when its version stops being current (at once if it already "
          "has, and again for the version upgrade moved it to) - an unwatched one gets none", "[modules]") {
  sandbox s;
  std::vector<std::string> watcher_versions;
  bool late_watcher_notified = false, unwatched_notified = true, v1_gone = false;
  auto r = run_node(herd::test::opts(2), [&] {
    must(modules::load(s.deploy("greeter_v1", "greeter.so")));
    herd::pid me = herd::self();
    herd::pid watcher = herd::spawn([me] {
      auto h = modules::create<greeter>("greeter");
      h.watch();
      herd::send(me, ready{});
      for (bool on = true; on;)
        herd::receive(
            [&](const modules::code_changed& c) {
              must(c.module == "greeter" && modules::upgrade(h));
              herd::send(me, switched{std::string(h.version())});
            },
            [&](go) { on = false; });
    });
    herd::pid late = herd::spawn([me] {
      auto h = modules::create<greeter>("greeter");
      herd::send(me, ready{});
      herd::receive([](go) {});
      h.watch();  // v2 is already current
      bool got = herd::receive([](const modules::code_changed&) { return true; }, herd::after(10s, [] { return false; }));
      herd::send(me, had_notice{got});
    });
    for (int i = 0; i < 2; ++i) herd::receive([](ready) {});
    must(modules::load(s.deploy("greeter_v2", "greeter.so")));
    herd::receive([&](const switched& w) { watcher_versions.push_back(w.version); });
    herd::send(late, go{});
    late_watcher_notified = herd::receive([](had_notice n) { return n.got; });
    // A handler of v2 that nobody watches: the v3 load sends it nothing.
    herd::pid unwatched = herd::spawn([me] {
      auto h = modules::create<greeter>("greeter");
      herd::send(me, ready{});
      herd::receive([](go) {});
      herd::send(me, had_notice{herd::receive([](const modules::code_changed&) { return true; },
                                              herd::after(0ms, [] { return false; }))});
    });
    herd::receive([](ready) {});
    v1_gone = wait_for([] { return info("greeter", "1").state.empty(); });
    must(modules::load(s.deploy("greeter_v3", "greeter.so")));
    herd::receive([&](const switched& w) { watcher_versions.push_back(w.version); });
    herd::send(unwatched, go{});
    unwatched_notified = herd::receive([](had_notice n) { return n.got; });
    herd::send(watcher, go{});
    must(herd::test::wait_live(1));
    (void)modules::unload("greeter");
  });
  INFO(r.to_string());
  CHECK(r.is_normal());
  CHECK(watcher_versions == std::vector<std::string>{"2", "3"});
  CHECK(late_watcher_notified);
  CHECK(v1_gone);
  CHECK_FALSE(unwatched_notified);
}

namespace module_refs_test {
struct churned {
  std::size_t kept;
};
struct notices {
  int n;
};
}  // namespace module_refs_test

// Many handlers on one version, made and dropped in a shuffled order by
// several processes at once: the registry's per-version entries (one per
// handler, one per watched handler) must come out exact, and a process still
// watching gets one code_changed however many watched handlers it holds.
TEST_CASE("handlers made and dropped in mixed order leave exact counts, and each watching process is notified once",
          "[modules]") {
  sandbox s;
  static constexpr int procs = 6, per_proc = 60;
  static constexpr std::size_t kept_each = 6;  // j%10==0, or (last process) odd j%5==0, among 60
  std::size_t listed_after_churn = 0, kept_total = 0, listed_after_release = 1;
  std::vector<int> notice_counts;
  bool counts_per_process_right = true;
  auto r = run_node(herd::test::opts(2), [&] {
    must(modules::load(s.deploy("greeter_v1", "greeter.so")));
    herd::pid me = herd::self();
    std::vector<herd::pid> ps;
    for (int i = 0; i < procs; ++i)
      ps.push_back(herd::spawn([me, i] {
        std::vector<herd::handler_ref<greeter>> hs;
        for (int j = 0; j < per_proc; ++j) {
          hs.push_back(modules::create<greeter>("greeter"));
          if (j % 2 == 0) hs.back().watch();
        }
        // Drop all but every tenth (watched) one in a shuffled order; the
        // last process drops every watched one and keeps unwatched ones.
        std::vector<int> order(per_proc);
        for (int j = 0; j < per_proc; ++j) order[j] = j;
        std::shuffle(order.begin(), order.end(), std::mt19937(1234u + i));
        std::size_t kept = 0;
        for (int j : order) {
          bool keep = i == procs - 1 ? j % 2 == 1 && j % 5 == 0 : j % 10 == 0;
          if (keep) ++kept;
          else hs[j].reset();
        }
        herd::send(me, churned{kept});
        herd::receive([](go) {});  // sent after the v2 load: every notice is before it
        int n = 0;
        for (bool on = true; on;)
          herd::receive([&](const modules::code_changed&) { ++n; }, [&](go) { on = false; });
        herd::send(me, notices{n});
        herd::receive([](go) {});
      }));
    for (int i = 0; i < procs; ++i) herd::receive([&](churned c) { kept_total += c.kept; });
    auto v1 = info("greeter", "1");
    listed_after_churn = v1.actors.size();
    for (int i = 0; i < procs; ++i) {
      if (static_cast<std::size_t>(std::count(v1.actors.begin(), v1.actors.end(), ps[i])) != kept_each)
        counts_per_process_right = false;
    }
    must(modules::load(s.deploy("greeter_v2", "greeter.so")));
    for (herd::pid p : ps) herd::send(p, go{});
    for (herd::pid p : ps) herd::send(p, go{});
    for (int i = 0; i < procs; ++i) herd::receive([&](notices n) { notice_counts.push_back(n.n); });
    for (herd::pid p : ps) herd::send(p, go{});
    must(herd::test::wait_live(1));
    must(wait_for([] { return info("greeter", "1").state.empty(); }));
    listed_after_release = info("greeter", "2").actors.size();
    (void)modules::unload("greeter");
  });
  INFO(r.to_string());
  CHECK(r.is_normal());
  CHECK(kept_total == procs * kept_each);
  CHECK(listed_after_churn == kept_total);
  CHECK(counts_per_process_right);
  std::sort(notice_counts.begin(), notice_counts.end());
  CHECK(notice_counts == std::vector<int>{0, 1, 1, 1, 1, 1});
  CHECK(listed_after_release == 0);
}
