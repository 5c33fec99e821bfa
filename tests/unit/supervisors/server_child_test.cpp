// A herd::server as a supervisor's child (herd::serve, gen_server:enter_loop):
// its parent is its supervisor, a crash restarts it with fresh state, and a
// trapping server's shutdown by its supervisor runs terminate.
#include "sup_fixtures.hpp"

#include <herd/actors/server.hpp>

#include <catch2/catch.hpp>

#include <atomic>

using namespace sup_test;
using herd::test::opts;
using herd::test::run_node;

namespace server_child_msgs {
struct get {};
struct add { int n; };
struct boom {};
struct whose_parent {};
}  // namespace server_child_msgs

namespace {
using namespace server_child_msgs;

struct counter_record {
  std::atomic<int> terminated{0};
  std::atomic<int> terminate_kind{-1};
};

struct counter : herd::server<counter> {
  using calls = herd::types<get, boom, whose_parent>;
  using casts = herd::types<add>;
  counter(int start, counter_record* rec) : n(start), rec(rec) {}
  int handle_call(get, const herd::from&) { return n; }
  int handle_call(boom, const herd::from&) { throw std::runtime_error("boom in handle_call"); }
  herd::pid handle_call(whose_parent, const herd::from&) { return herd::parent(); }
  void handle_cast(add a) { n += a.n; }
  void terminate(const herd::exit_reason& r) {
    rec->terminate_kind = int(r.kind());
    ++rec->terminated;
  }
  int n;
  counter_record* rec;
};
}  // namespace

TEST_CASE("a server runs as a supervisor's child - its parent is the supervisor, and a crash restarts it with fresh "
          "state",
          "[supervisor][server]") {
  counter_record rec;
  int before_crash = 0, after_restart = -1;
  bool parent_is_sup = false, crash_seen = false, new_pid = false;
  auto r = run_node(opts(2), [&] {
    auto s = sup::start_link({.name = "counter_sup"},
                             {{.id = "counter",
                               .start = [&rec] { return herd::serve<counter>(10, &rec); },
                               .registered_name = "counter"}});
    REQUIRE(s);
    herd::pid c = herd::whereis("counter").value();
    parent_is_sup = herd::call<herd::pid>(c, whose_parent{}) == *s;
    herd::cast(c, add{5});
    before_crash = herd::call<int>(c, get{});
    try {
      (void)herd::call<int>(c, boom{});
    } catch (const herd::call_error& e) {
      crash_seen = e.kind() == herd::call_error::exited;
    }
    herd::pid c2 = wait_restart(*s, "counter", c);
    new_pid = c2.valid() && c2 != c;
    after_restart = herd::call<int>(c2, get{});
    (void)sup::stop(*s);
  });
  CHECK(r.is_normal());
  CHECK(parent_is_sup);
  CHECK(before_crash == 15);
  CHECK(crash_seen);
  CHECK(new_pid);
  CHECK(after_restart == 10);
}

TEST_CASE("a trapping server shut down by its supervisor runs terminate with shutdown", "[supervisor][server]") {
  counter_record rec;
  auto r = run_node(opts(2), [&] {
    auto s = sup::start_link({}, {{.id = "counter", .start = [&rec] {
                                     return herd::serve<counter>(herd::server_options{.trap_exit = true}, 0, &rec);
                                   }}});
    REQUIRE(s);
    (void)herd::call<int>(pid_of(*s, "counter"), get{});
    (void)sup::stop(*s);
  });
  CHECK(r.is_normal());
  CHECK(rec.terminated == 1);
  CHECK(rec.terminate_kind == int(herd::exit_kind::shutdown));
}

TEST_CASE("parent() is the spawner - no_pid for the root and for a process spawned from a foreign thread",
          "[server][spawn]") {
  herd::pid root, child_parent, root_parent = herd::pid{0, 0};
  auto r = run_node(opts(2), [&] {
    root = herd::self();
    root_parent = herd::parent();
    herd::pid me = herd::self();
    herd::spawn([me] { herd::send(me, herd::parent()); });
    child_parent = herd::receive([](herd::pid p) { return p; });
  });
  CHECK(r.is_normal());
  CHECK(child_parent == root);
  CHECK(root_parent == herd::no_pid);
  CHECK(herd::parent() == herd::no_pid);
}
