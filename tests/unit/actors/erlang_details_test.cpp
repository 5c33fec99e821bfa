// The Erlang details a user trips on: calling oneself fails at once
// (calling_self), a crash outside a supervisor is reported ("Error in process
// ... with exit value ..."), and call / cast / send_after / monitor take a
// registered name, failing with noproc when nothing is registered under it.
#include <herd/actors.hpp>
#include <herd/actors/logger.hpp>
#include <herd/supervisors/supervisor.hpp>

#include <catch2/catch.hpp>

#include "support/node_fixture.hpp"

#include <unistd.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using herd::test::run_node;

namespace erlang_details_msgs {
struct get {};
struct add {
  int by;
};
struct tick {
  int n;
};
struct stop {};
struct started_as {
  herd::pid who;
};
struct crash_marker_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
}  // namespace erlang_details_msgs

using namespace erlang_details_msgs;

namespace {

// Answers get with its count, adds on cast_request<add>, forwards tick to `to`.
void counter(herd::pid to) {
  int n = 0;
  for (bool done = false; !done;)
    herd::receive([&](herd::call_request<get>&& c) { herd::reply(c.from, n); },
                  [&](herd::cast_request<add>&& c) { n += c.msg.by; }, [&](tick t) { herd::send(to, t); },
                  [&](stop) { done = true; });
}

std::string read_all(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("a call to oneself fails at once with calling_self and leaves no request behind", "[call]") {
  std::optional<herd::call_error::kind_t> kind;
  std::size_t left = 99;
  auto r = run_node(herd::test::opts(2), [&] {
    try {
      herd::call<int>(herd::self(), get{}, 300ms);
    } catch (const herd::call_error& e) {
      kind = e.kind();
    }
    left = herd::mailbox_size();
  });
  CHECK(r.is_normal());
  REQUIRE(kind);
  CHECK(*kind == herd::call_error::calling_self);
  CHECK(left == 0);
}

TEST_CASE("a crash outside a supervisor is reported through the logger - one whose trapping parent is linked is not",
          "[logger]") {
  std::string path = "/tmp/herd-erlang-details-" + std::to_string(::getpid()) + ".log";
  REQUIRE(herd::set_log_file(path));
  auto before = herd::log_stats();
  auto r = run_node(herd::test::opts(2), [&] {
    auto [lone, lone_ref] = herd::spawn_monitor([] { throw crash_marker_error("lonely boom"); });
    herd::receive(herd::when([ref = lone_ref](const herd::down& d) { return d.ref == ref; }, [](herd::down&&) {}));
    // A parent that traps exits and is linked hears of it (as a supervisor does).
    herd::trap_exit(true);
    herd::pid kid = herd::spawn_link([] { throw crash_marker_error("watched boom"); });
    herd::receive(herd::when([kid](const herd::exit_msg& e) { return e.from == kid; }, [](herd::exit_msg&&) {}));
    herd::trap_exit(false);
    // Ends that are not crashes: normal, shutdown.
    auto [a, ra] = herd::spawn_monitor([] {});
    auto [b, rb] = herd::spawn_monitor([] { herd::exit(herd::exit_reason::shutdown()); });
    for (int i = 0; i < 2; ++i) herd::receive([](herd::down&&) {});
    (void)a, (void)b, (void)ra, (void)rb;
  });
  herd::log_flush();
  auto after = herd::log_stats();
  herd::set_log_stderr();
  std::string log = read_all(path);
  ::unlink(path.c_str());
  CHECK(r.is_normal());
  INFO(log);
  CHECK(after.reported - before.reported == 1);
  CHECK(log.find("Error in process") != std::string::npos);
  CHECK(log.find("lonely boom") != std::string::npos);
  CHECK(log.find("crash_marker_error") != std::string::npos);
  CHECK(log.find("watched boom") == std::string::npos);
}

TEST_CASE("call, cast, send_after and monitor by registered name reach the process registered under it",
          "[registry][call]") {
  int got = -1;
  std::optional<herd::down> down;
  bool cast_ok = false, ticked = false, registered = false;
  herd::pid server;
  auto r = run_node(herd::test::opts(2), [&] {
    server = herd::spawn(counter, herd::self());
    registered = herd::register_name("details_counter", server);
    cast_ok = herd::cast("details_counter", add{5});
    got = herd::call<int>("details_counter", get{});
    herd::send_after(5ms, "details_counter", tick{7});
    ticked = herd::receive([](tick t) { return t.n == 7; }, herd::after(5s, [] { return false; }));
    herd::monitor_ref ref = herd::monitor("details_counter");
    herd::send(server, stop{});
    down = herd::receive([](herd::down&& d) { return std::optional<herd::down>(std::move(d)); },
                         herd::after(5s, [] { return std::optional<herd::down>(); }));
    if (down && down->ref != ref) down.reset();
  });
  CHECK(r.is_normal());
  CHECK(registered);
  CHECK(cast_ok);
  CHECK(got == 5);
  CHECK(ticked);
  REQUIRE(down);
  CHECK(down->who == server);
  CHECK(down->reason.is_normal());
}

TEST_CASE("call, cast, send_after and monitor by a name nobody holds fail with noproc and lose nothing",
          "[registry][call]") {
  std::optional<herd::call_error::kind_t> kind;
  std::string what;
  bool cast_result = true, tick_came = true;
  std::optional<herd::down> down;
  auto r = run_node(herd::test::opts(2), [&] {
    try {
      herd::call<int>("details_nobody", get{}, 1s);
    } catch (const herd::call_error& e) {
      kind = e.kind();
      what = e.what();
    }
    cast_result = herd::cast("details_nobody", add{1});
    herd::monitor_ref ref = herd::monitor("details_nobody");
    down = herd::receive(herd::when([ref](const herd::down& d) { return d.ref == ref; },
                                    [](herd::down&& d) { return std::optional<herd::down>(std::move(d)); }),
                         herd::after(5s, [] { return std::optional<herd::down>(); }));
    // Resolved when it fires: still free then, so dropped (freed: run_node
    // checks no message outlives the node). A later timer to ourselves shows
    // the first one has fired.
    herd::send_after(1ms, "details_nobody", tick{1});
    herd::send_after(30ms, herd::self(), stop{});
    herd::receive([](stop) {});
    tick_came = herd::receive([](tick) { return true; }, herd::after(0ms, [] { return false; }));
  });
  CHECK(r.is_normal());
  REQUIRE(kind);
  CHECK(*kind == herd::call_error::noproc);
  CHECK(what.find("details_nobody") != std::string::npos);
  CHECK_FALSE(cast_result);
  REQUIRE(down);
  CHECK(down->reason == herd::exit_reason::noproc());
  CHECK(down->who == herd::no_pid);
  CHECK_FALSE(tick_came);
}

TEST_CASE("a spawn over max_actors names the node's real limit, not the requested one", "[spawn]") {
  herd::node_options o = herd::test::opts(2);
  o.max_actors = 10;
  std::string msg;
  std::size_t limit = 0;
  std::ptrdiff_t before = herd::node::live_messages();
  herd::node n(o);
  auto r = n.run([&] {
    std::vector<herd::pid> kids;
    try {
      for (int i = 0; i < 100'000; ++i) kids.push_back(herd::spawn([] { herd::receive([](stop) {}); }));
    } catch (const herd::spawn_error& e) {
      msg = e.what();
    }
    limit = herd::current_node_stats().max_actors;
    for (herd::pid p : kids) herd::send(p, stop{});
  });
  herd::test::check_clean(n, before);
  CHECK(r.is_normal());
  INFO(msg);
  CHECK(limit > 10);  // rounded up per worker
  CHECK(msg.find("limit is " + std::to_string(limit)) != std::string::npos);
  CHECK(msg.find("max_actors 10,") != std::string::npos);
}

TEST_CASE("rest_for_one restarting its last child does not claim children after it", "[supervisor][logger]") {
  namespace sup = herd::supervisor;
  std::string path = "/tmp/herd-rest-for-one-" + std::to_string(::getpid()) + ".log";
  REQUIRE(herd::set_log_file(path));
  bool started = false;
  auto r = run_node(herd::test::opts(2), [&] {
    herd::pid me = herd::self();
    auto s = sup::start_link({.strategy = sup::rest_for_one},
                             {{.id = "first", .start = [] { herd::receive([](stop) {}); }},
                              {.id = "last", .start = [me] {
                                 herd::send(me, started_as{herd::self()});
                                 herd::receive([](stop) {});
                                 throw crash_marker_error("last one crashes");
                               }}});
    if (!s) return;
    herd::pid last = herd::receive([](started_as a) { return a.who; });
    started = true;
    herd::send(last, stop{});
    herd::receive([](started_as) {});  // restarted
    herd::unlink(*s);
    (void)sup::stop(*s);
  });
  herd::log_flush();
  herd::set_log_stderr();
  std::string log = read_all(path);
  ::unlink(path.c_str());
  CHECK(r.is_normal());
  CHECK(started);
  INFO(log);
  CHECK(log.find("(rest_for_one; no children after it)") != std::string::npos);
  CHECK(log.find("with the children after it") == std::string::npos);
}
