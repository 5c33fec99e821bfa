// Registered names: register/whereis/send by name/unregister, spawn with a
// name, at most one name per process, names released at exit.
#include <herd/actors.hpp>

#include <catch2/catch.hpp>

#include "support/node_fixture.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

using namespace std::chrono_literals;
using herd::test::run_node;

namespace registry_test_msgs {
struct ask { herd::pid from; int n; };
struct answer { int n; };
struct stop {};
struct hello {};
}  // namespace registry_test_msgs

using namespace registry_test_msgs;

namespace {
void echo_until_stop() {
  for (bool more = true; more;)
    herd::receive([](ask a) { herd::send(a.from, answer{a.n}); }, [&](stop) { more = false; });
}
}  // namespace

TEST_CASE("register_name, whereis, send by name and unregister_name", "[registry]") {
  unsigned workers = HERD_WORKERS();
  bool reg_ok = false, reg_again = true, send_ok = false, send_after_unreg = true;
  bool unreg_ok = false, unreg_again = true, listed = false, unlisted = false;
  std::optional<herd::pid> where, where_after;
  herd::pid child;
  int got = 0;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    child = herd::spawn(echo_until_stop);
    reg_ok = herd::register_name("registry_test.echo", child);
    reg_again = herd::register_name("registry_test.echo", child);
    where = herd::whereis("registry_test.echo");
    for (auto& [name, p] : herd::registered()) listed = listed || (name == "registry_test.echo" && p == child);
    send_ok = herd::send("registry_test.echo", ask{me, 7});
    herd::receive([&](answer a) { got = a.n; });
    unreg_ok = herd::unregister_name("registry_test.echo");
    unreg_again = herd::unregister_name("registry_test.echo");
    where_after = herd::whereis("registry_test.echo");
    auto names = herd::registered();
    unlisted = std::none_of(names.begin(), names.end(), [](auto& e) { return e.first == "registry_test.echo"; });
    send_after_unreg = herd::send("registry_test.echo", ask{me, 8});
    herd::send(child, stop{});
  });
  CHECK(r.is_normal());
  CHECK(reg_ok);
  CHECK_FALSE(reg_again);
  REQUIRE(where.has_value());
  CHECK(*where == child);
  CHECK(listed);
  CHECK(send_ok);
  CHECK(got == 7);
  CHECK(unreg_ok);
  CHECK_FALSE(unreg_again);
  CHECK_FALSE(where_after.has_value());
  CHECK(unlisted);
  CHECK_FALSE(send_after_unreg);
}

TEST_CASE("spawn with a name registers the process before it runs", "[registry][spawn]") {
  unsigned workers = HERD_WORKERS();
  bool child_sees_itself = false;
  herd::pid child;
  std::optional<herd::pid> where;
  int got = 0;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    child = herd::spawn({.name = "registry_test.named"}, [&child_sees_itself] {
      auto w = herd::whereis("registry_test.named");
      child_sees_itself = w && *w == herd::self();
      echo_until_stop();
    });
    where = herd::whereis("registry_test.named");
    herd::send("registry_test.named", ask{me, 3});
    herd::receive([&](answer a) { got = a.n; });
    herd::send("registry_test.named", stop{});
  });
  CHECK(r.is_normal());
  CHECK(child_sees_itself);
  REQUIRE(where.has_value());
  CHECK(*where == child);
  CHECK(got == 3);
}

TEST_CASE("a taken name: spawn throws spawn_error, register_name returns false, nothing leaks", "[registry][spawn]") {
  unsigned workers = HERD_WORKERS();
  bool threw = false, wrong_exception = false;
  std::string what;
  bool reg_taken = true, second_ran = false;
  std::size_t spawned_before = 0, spawned_after = 0, live_before = 0, live_after = 0;
  herd::pid first, other;
  std::optional<herd::pid> where;
  auto r = run_node(herd::test::opts(workers), [&] {
    first = herd::spawn({.name = "registry_test.taken"}, echo_until_stop);
    other = herd::spawn(echo_until_stop);
    spawned_before = herd::current_node_stats().spawned;
    live_before = herd::current_node_stats().live_processes;
    try {
      herd::spawn({.name = "registry_test.taken"}, [&] { second_ran = true; });
    } catch (const herd::spawn_error& e) {
      threw = true;
      what = e.what();
    } catch (...) {
      wrong_exception = true;
    }
    spawned_after = herd::current_node_stats().spawned;
    live_after = herd::current_node_stats().live_processes;
    reg_taken = herd::register_name("registry_test.taken", other);
    where = herd::whereis("registry_test.taken");
    herd::send(first, stop{});
    herd::send(other, stop{});
  });
  CHECK(r.is_normal());
  CHECK(threw);
  CHECK_FALSE(wrong_exception);
  CHECK_FALSE(second_ran);
  CHECK_THAT(what, Catch::Contains("registry_test.taken"));
  CHECK(spawned_after == spawned_before);
  CHECK(live_after == live_before);
  CHECK_FALSE(reg_taken);
  REQUIRE(where.has_value());
  CHECK(*where == first);
}

TEST_CASE("a process has at most one name - after unregistering it may take another", "[registry]") {
  bool first = false, second = true, third = false;
  std::optional<herd::pid> w1, w2, w3;
  herd::pid child;
  auto r = run_node(herd::test::opts(2), [&] {
    child = herd::spawn(echo_until_stop);
    first = herd::register_name("registry_test.one", child);
    second = herd::register_name("registry_test.two", child);
    w2 = herd::whereis("registry_test.two");
    herd::unregister_name("registry_test.one");
    third = herd::register_name("registry_test.two", child);
    w1 = herd::whereis("registry_test.one");
    w3 = herd::whereis("registry_test.two");
    herd::send(child, stop{});
  });
  CHECK(r.is_normal());
  CHECK(first);
  CHECK_FALSE(second);
  CHECK_FALSE(w2.has_value());
  CHECK(third);
  CHECK_FALSE(w1.has_value());
  REQUIRE(w3.has_value());
  CHECK(*w3 == child);
}

TEST_CASE("a name is released when its process exits and can be registered again", "[registry]") {
  unsigned workers = HERD_WORKERS();
  bool released = false, reregistered = false, released_after_error = false;
  bool dead_reg = true;
  herd::pid dead;
  auto r = run_node(herd::test::opts(workers), [&] {
    dead = herd::spawn({.name = "registry_test.temp"}, echo_until_stop);
    herd::send("registry_test.temp", stop{});
    released = herd::test::eventually([] { return !herd::whereis("registry_test.temp"); }, 2000ms);
    // The dead pid cannot take a name.
    dead_reg = herd::register_name("registry_test.ghost", dead);
    // The name is free again: the root takes it.
    reregistered = herd::register_name("registry_test.temp", herd::self());
    // A process that ends by an exception releases its name too.
    herd::spawn({.name = "registry_test.thrower"}, [] {
      herd::receive([](stop) {});
      throw std::runtime_error("boom");
    });
    herd::send("registry_test.thrower", stop{});
    released_after_error = herd::test::eventually([] { return !herd::whereis("registry_test.thrower"); }, 2000ms);
  });
  CHECK(r.is_normal());
  CHECK(released);
  CHECK_FALSE(dead_reg);
  CHECK_FALSE(herd::whereis("registry_test.ghost").has_value());
  CHECK(reregistered);
  CHECK(released_after_error);
  // The root's own name went with it.
  CHECK_FALSE(herd::whereis("registry_test.temp").has_value());
  CHECK(herd::registered().empty());
}

TEST_CASE("registered_name tells a process's name, and nothing once it is unregistered or dead", "[registry]") {
  std::optional<std::string> before, named, after_unreg, dead_name, unknown;
  auto r = run_node(herd::test::opts(2), [&] {
    herd::pid child = herd::spawn(echo_until_stop);
    before = herd::registered_name(child);
    herd::register_name("registry_test.named", child);
    named = herd::registered_name(child);
    herd::unregister_name("registry_test.named");
    after_unreg = herd::registered_name(child);
    herd::pid dead = herd::spawn({.name = "registry_test.dying"}, [] {});
    herd::test::eventually([&] { return !herd::whereis("registry_test.dying"); }, 2000ms);
    dead_name = herd::registered_name(dead);
    unknown = herd::registered_name(herd::pid{});
    herd::send(child, stop{});
  });
  CHECK(r.is_normal());
  CHECK_FALSE(before.has_value());
  REQUIRE(named.has_value());
  CHECK(*named == "registry_test.named");
  CHECK_FALSE(after_unreg.has_value());
  CHECK_FALSE(dead_name.has_value());
  CHECK_FALSE(unknown.has_value());
}

TEST_CASE("send to an unknown name returns false and the message is freed", "[registry]") {
  bool sent = true;
  auto r = run_node(herd::test::opts(1), [&] { sent = herd::send("registry_test.nobody", std::string(1000, 'x')); });
  CHECK(r.is_normal());
  CHECK_FALSE(sent);
}

TEST_CASE("the root can be spawned with a name", "[registry]") {
  bool sees = false;
  auto r = run_node(
      herd::test::opts(1),
      [&] {
        auto w = herd::whereis("registry_test.root");
        sees = w && *w == herd::self();
      },
      herd::spawn_options{.name = "registry_test.root"});
  CHECK(r.is_normal());
  CHECK(sees);
  CHECK_FALSE(herd::whereis("registry_test.root").has_value());
}

TEST_CASE("names can be registered and looked up from a foreign thread", "[registry]") {
  bool reg = false, sent = false;
  std::optional<herd::pid> where;
  int got = 0;
  herd::pid child;
  auto r = run_node(herd::test::opts(2), [&] {
    herd::pid me = herd::self();
    child = herd::spawn(echo_until_stop);
    herd::blocking([&] {
      std::thread t([&] {
        reg = herd::register_name("registry_test.foreign", child);
        where = herd::whereis("registry_test.foreign");
        sent = herd::send("registry_test.foreign", ask{me, 11});
      });
      t.join();
    });
    herd::receive([&](answer a) { got = a.n; });
    herd::send(child, stop{});
  });
  CHECK(r.is_normal());
  CHECK(reg);
  REQUIRE(where.has_value());
  CHECK(*where == child);
  CHECK(sent);
  CHECK(got == 11);
}
