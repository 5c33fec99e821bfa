// herd::server (gen_server as a class): dispatch of calls, casts and infos,
// deferred replies, terminate on every orderly way out, exceptions as exit
// reasons, synchronous start (with a name, linked, a failing constructor),
// and hibernation between messages.
// herd-unity: file scope (its checks name its types with their namespaces)
#include <herd/actors.hpp>
#include <herd/actors/logger.hpp>
#include <herd/actors/server.hpp>

#include <catch2/catch.hpp>

#include "support/node_fixture.hpp"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using herd::test::run_node;

namespace server_test_msgs {
struct get {};
struct put {
  int v;
};
struct inc {
  int by;
};
struct note {
  std::string text;
};
struct stranger {};
struct wait_for {
  int at_least;  // answered once the count reaches it (deferred reply)
};
struct fail {
  std::string why;
};
struct peek {};  // maybe_reply: answered only when n is even
struct stop_me {
  herd::exit_reason reason;
};
struct sleep_now {};
struct error_in_ctor : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct bad_call : std::logic_error {
  using std::logic_error::logic_error;
};

// What a server saw, for the test thread to check after the node is done.
struct record {
  std::atomic<int> terminated{0};
  herd::exit_reason terminate_reason;
  std::vector<std::string> notes;
  int exits_seen = 0;
  herd::pid exit_from;
  std::size_t unexpected = 0;
  std::vector<std::string> unexpected_names;
};

struct counter : herd::server<counter> {
  using calls = herd::types<get, put, wait_for, fail, peek, stop_me>;
  using casts = herd::types<inc>;
  using infos = herd::types<note, herd::exit_msg>;

  counter(record* r, int start) : rec(r), n(start) {}

  int handle_call(const get&, const herd::from&) { return n; }
  herd::ok handle_call(put p) {  // no `from`, by value
    n = p.v;
    return {};
  }
  herd::noreply_t handle_call(const wait_for& w, const herd::from& f) {
    waiting.push_back({w.at_least, f});
    answer_waiters();
    return herd::noreply;
  }
  int handle_call(const fail& f, const herd::from&) { throw bad_call(f.why); }
  herd::maybe_reply<int> handle_call(const peek&, const herd::from&) {
    if (n % 2 == 0) return n;
    return herd::noreply;
  }
  herd::ok handle_call(stop_me&& s) {
    stop(std::move(s.reason));
    return {};
  }
  void handle_cast(const inc& i) {
    n += i.by;
    answer_waiters();
  }
  void handle_info(note&& m) { rec->notes.push_back(std::move(m.text)); }
  void handle_info(const herd::exit_msg& e) {
    ++rec->exits_seen;
    rec->exit_from = e.from;
  }
  void handle_unexpected(std::string_view name) { rec->unexpected_names.emplace_back(name); }
  void terminate(const herd::exit_reason& r) {
    rec->terminate_reason = r;
    rec->unexpected = unexpected_messages();
    rec->terminated.fetch_add(1);
  }

  void answer_waiters() {
    for (std::size_t i = 0; i < waiting.size();) {
      if (n >= waiting[i].first) {
        herd::reply(waiting[i].second, n);
        waiting[i] = waiting.back();
        waiting.pop_back();
      } else {
        ++i;
      }
    }
  }

  record* rec;
  int n;
  std::vector<std::pair<int, herd::from>> waiting;
};

// The smallest server: one call, no other declarations.
struct echo : herd::server<echo> {
  using calls = herd::types<int>;
  int handle_call(int v) { return v; }
};

struct failing_ctor : herd::server<failing_ctor> {
  explicit failing_ctor(int) { throw error_in_ctor("no config"); }
};

// For hibernation: a counter that can be asked to hibernate after a call.
struct sleeper : herd::server<sleeper> {
  using calls = herd::types<get, sleep_now>;
  using casts = herd::types<inc>;
  int handle_call(const get&) { return n; }
  herd::ok handle_call(sleep_now) {
    hibernate_now();
    return {};
  }
  void handle_cast(inc i) { n += i.by; }
  int n = 0;
};
}  // namespace server_test_msgs

using namespace server_test_msgs;

TEST_CASE("a server dispatches calls, casts and infos by type - other messages are dropped and counted",
          "[server]") {
  unsigned workers = HERD_WORKERS();
  record rec;
  int first = -1, after_casts = -1, after_put = -1, typed = -1;
  herd::exit_reason stopped = herd::exit_reason::kill();
  auto r = run_node(herd::test::opts(workers), [&] {
    auto s = herd::start_server<counter>(&rec, 10);
    first = herd::call<int>(s, get{});
    herd::cast(s, inc{2});
    s.cast(inc{3});
    after_casts = s.call(get{});  // server_ref: the reply type is the handler's
    herd::ok done = s.call(put{40});
    (void)done;
    after_put = herd::call<int>(s.id, get{});
    herd::send(s, note{"hello"});
    herd::send(s, stranger{});
    herd::send(s, 3.5);
    s.send(note{"world"});
    typed = s.call(get{});
    stopped = *herd::stop_server(s);
  });
  CHECK(r.is_normal());
  CHECK(first == 10);
  CHECK(after_casts == 15);
  CHECK(after_put == 40);
  CHECK(typed == 40);
  CHECK(rec.notes == std::vector<std::string>{"hello", "world"});
  CHECK(rec.unexpected == 2);
  REQUIRE(rec.unexpected_names.size() == 2);
  CHECK(rec.unexpected_names[0] == "server_test_msgs::stranger");
  CHECK(rec.unexpected_names[1] == "double");
  CHECK(rec.terminated == 1);
  CHECK(stopped == herd::exit_reason::normal());
}

TEST_CASE("by default an unexpected message is dropped with a report through the logger", "[server][logger]") {
  std::string path = "/tmp/herd-server-test-" + std::to_string(::getpid()) + ".log";
  REQUIRE(herd::set_log_file(path));
  std::size_t dropped = 0;
  auto r = run_node(herd::test::opts(2), [&] {
    auto s = herd::start_server<echo>(herd::spawn_options{.name = "echo_srv"});
    herd::send(s, stranger{});
    (void)s.call(1);
    (void)herd::stop_server(s);
  });
  herd::log_flush();
  herd::set_log_stderr();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  ::unlink(path.c_str());
  (void)dropped;
  CHECK(r.is_normal());
  INFO("log: " << text.str());
  CHECK(text.str().find("(echo_srv): dropped an unexpected message of type server_test_msgs::stranger") !=
        std::string::npos);
}

TEST_CASE("a server without casts or infos declared works with its calls alone", "[server]") {
  int got = 0;
  auto r = run_node(herd::test::opts(1), [&] {
    auto s = herd::start_server<echo>();
    for (int i = 1; i <= 100; ++i) got += s.call(i);
    (void)herd::stop_server(s);
  });
  CHECK(r.is_normal());
  CHECK(got == 5050);
}

TEST_CASE("a deferred reply: handle_call returns noreply and the server answers later with reply(from, v)",
          "[server]") {
  unsigned workers = HERD_WORKERS();
  record rec;
  std::atomic<int> answered{0};
  int early = -1, late_a = -1, late_b = -1, odd_peek = 0;
  bool peek_timed_out = false;
  std::vector<int> order;
  auto r = run_node(herd::test::opts(workers), [&] {
    auto s = herd::start_server<counter>(&rec, 0);
    herd::pid me = herd::self();
    // Two callers wait for the count to reach 3 and 5; casts get it there.
    std::vector<herd::pid> callers;
    for (int target : {3, 5})
      callers.push_back(herd::spawn([s, me, target, &answered, &late_a, &late_b] {
        int v = herd::call<int>(s, wait_for{target});
        (target == 3 ? late_a : late_b) = v;
        answered.fetch_add(1);
        herd::send(me, target);
      }));
    // Both wait in their call: their requests are in the server's mailbox.
    for (herd::pid c : callers) herd::test::eventually_parked(c, 0, 60s);
    early = answered.load();
    s.cast(inc{3});
    order.push_back(herd::receive([](int t) { return t; }));
    s.cast(inc{2});
    order.push_back(herd::receive([](int t) { return t; }));
    // maybe_reply: an odd count (5) is not answered, an even one is.
    try {
      herd::call<int>(s, peek{}, 50ms);
    } catch (const herd::call_error& e) {
      peek_timed_out = e.kind() == herd::call_error::timeout;
    }
    s.cast(inc{1});
    odd_peek = herd::call<int>(s, peek{});
    (void)herd::stop_server(s);
  });
  CHECK(r.is_normal());
  CHECK(early == 0);
  CHECK(late_a == 3);
  CHECK(late_b == 5);
  CHECK(peek_timed_out);
  CHECK(odd_peek == 6);
  CHECK(order == std::vector<int>{3, 5});
}

TEST_CASE("terminate runs on stop_server and on stop() from a handler, with the reason - the server exits with it",
          "[server][terminate]") {
  unsigned workers = HERD_WORKERS();
  record rec1, rec2;
  herd::exit_reason stopped1, down2;
  auto r = run_node(herd::test::opts(workers), [&] {
    auto s1 = herd::start_server<counter>(&rec1, 0);
    s1.cast(inc{1});  // queued before the stop: handled first
    stopped1 = herd::stop_server(s1, herd::exit_reason::shutdown("maintenance"), 5s).value();

    auto s2 = herd::start_server<counter>(&rec2, 0);
    herd::monitor_ref m = herd::monitor(s2);
    herd::ok ack = s2.call(stop_me{herd::exit_reason::shutdown("asked")});  // the reply comes first
    (void)ack;
    herd::receive(herd::when([m](const herd::down& d) { return d.ref == m; }, [&](herd::down d) { down2 = d.reason; }));
  });
  CHECK(r.is_normal());
  CHECK(stopped1 == herd::exit_reason::shutdown("maintenance"));
  CHECK(rec1.terminated == 1);
  CHECK(rec1.terminate_reason == herd::exit_reason::shutdown("maintenance"));
  CHECK(rec2.terminated == 1);
  CHECK(rec2.terminate_reason == herd::exit_reason::shutdown("asked"));
  CHECK(down2 == herd::exit_reason::shutdown("asked"));
}

TEST_CASE("stop_server returns noproc as the reason for a dead pid, and errc timeout as a value (nothing killed) for a "
          "process that never takes the request",
          "[server][terminate]") {
  std::optional<herd::exit_reason> gone_reason;
  std::optional<herd::errc> code;
  std::string message;
  bool still_alive = false;
  auto r = run_node(herd::test::opts(2), [&] {
    herd::pid gone = herd::spawn([] {});
    herd::test::wait_live(1);
    if (auto why = herd::stop_server(gone)) gone_reason = *why;
    herd::pid busy = herd::spawn([] { herd::receive([](stranger) {}); });
    auto late = herd::stop_server(busy, herd::exit_reason::normal(), 30ms);
    if (!late) {
      code = late.code();
      message = late.error().message();
    }
    still_alive = herd::current_node_stats().live_processes == 2;
    herd::send(busy, stranger{});
  });
  CHECK(r.is_normal());
  REQUIRE(gone_reason);
  CHECK(gone_reason->kind() == herd::exit_kind::noproc);
  REQUIRE(code);
  CHECK(*code == herd::errc::timeout);
  CHECK(message.rfind("timeout: stop_server <", 0) == 0);
  CHECK(message.find("30 ms") != std::string::npos);
  CHECK(still_alive);
}

TEST_CASE("trapping exits, a shutdown from the parent runs terminate and the server exits with it - "
          "an exit from another process goes to handle_info",
          "[server][terminate][links]") {
  unsigned workers = HERD_WORKERS();
  record rec;
  herd::exit_reason server_down;
  herd::pid stranger_pid;
  bool still_there = false;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    // The parent starts a linked, trapping server, tells the root, then exits
    // with `shutdown`: the link carries it to the server.
    herd::pid parent = herd::spawn([me, &rec] {
      auto s = herd::start_server_link<counter>(herd::server_options{.trap_exit = true}, &rec, 0);
      herd::send(me, s.id);
      herd::receive([](stranger) {});
      herd::exit(herd::exit_reason::shutdown("parent leaving"));
    });
    herd::pid s = herd::receive([](herd::pid p) { return p; });
    herd::monitor_ref m = herd::monitor(s);
    // A linked process that is not the parent dies: handle_info, not terminate.
    stranger_pid = herd::spawn([s] {
      herd::link(s);
      herd::receive([](stranger) {});
      herd::exit(herd::exit_reason::shutdown("not the parent"));
    });
    // Monitored before it may end: its end sends the exit signal before the
    // `down`, so once the `down` is here the signal is ahead of the call below
    // in the server's mailbox. (A monitor set after its end gets a noproc
    // `down` that can overtake the exit signal still being sent, and then the
    // parent's shutdown could too: seen under TSan on a busy machine.)
    herd::monitor_ref sm = herd::monitor(stranger_pid);
    herd::send(stranger_pid, stranger{});
    herd::receive(herd::when([sm](const herd::down& d) { return d.ref == sm; }, [](const herd::down&) {}));
    still_there = herd::call<int>(s, get{}) == 0;
    herd::send(parent, stranger{});
    herd::receive(herd::when([m](const herd::down& d) { return d.ref == m; },
                             [&](herd::down d) { server_down = d.reason; }));
  });
  CHECK(r.is_normal());
  CHECK(still_there);
  CHECK(rec.exits_seen == 1);
  CHECK(rec.exit_from == stranger_pid);
  CHECK(rec.terminated == 1);
  CHECK(rec.terminate_reason == herd::exit_reason::shutdown("parent leaving"));
  CHECK(server_down == herd::exit_reason::shutdown("parent leaving"));
}

TEST_CASE("a trapping server still alive when the node shuts down runs terminate(shutdown)",
          "[server][terminate][node]") {
  record rec;
  int answered = -1;
  auto r = run_node(herd::test::opts(2), [&] {
    auto s = herd::start_server<counter>(herd::server_options{.trap_exit = true}, &rec, 0);
    s.cast(inc{1});
    answered = s.call(get{});
  });  // the root returns with the server alive
  CHECK(r.is_normal());
  CHECK(answered == 1);
  CHECK(rec.terminated == 1);
  CHECK(rec.terminate_reason.kind() == herd::exit_kind::shutdown);
}

TEST_CASE("a server that does not trap exits dies of its parent's shutdown without terminate", "[server][terminate]") {
  record rec;
  herd::exit_reason server_down;
  auto r = run_node(herd::test::opts(2), [&] {
    herd::pid me = herd::self();
    herd::pid parent = herd::spawn([me, &rec] {
      auto s = herd::start_server_link<counter>(&rec, 0);
      herd::send(me, s.id);
      herd::receive([](stranger) {});
      herd::exit(herd::exit_reason::shutdown());
    });
    herd::pid s = herd::receive([](herd::pid p) { return p; });
    herd::monitor_ref m = herd::monitor(s);
    herd::send(parent, stranger{});
    herd::receive(herd::when([m](const herd::down& d) { return d.ref == m; },
                             [&](herd::down d) { server_down = d.reason; }));
  });
  CHECK(r.is_normal());
  CHECK(rec.terminated == 0);
  CHECK(server_down == herd::exit_reason::shutdown());
}

TEST_CASE("an exception in handle_call ends the server with it: the caller gets call_error::exited with the "
          "exception's type and what(), terminate runs first",
          "[server][exit]") {
  unsigned workers = HERD_WORKERS();
  record rec;
  bool got_error = false;
  herd::exit_reason seen, down_reason;
  auto r = run_node(herd::test::opts(workers), [&] {
    auto s = herd::start_server<counter>(&rec, 0);
    herd::monitor_ref m = herd::monitor(s);
    try {
      herd::call<int>(s, fail{"bad request"});
    } catch (const herd::call_error& e) {
      got_error = e.kind() == herd::call_error::exited;
      seen = e.reason();
    }
    herd::receive(herd::when([m](const herd::down& d) { return d.ref == m; },
                             [&](herd::down d) { down_reason = d.reason; }));
  });
  CHECK(r.is_normal());
  CHECK(got_error);
  CHECK(seen.kind() == herd::exit_kind::error);
  CHECK(seen.type() == "server_test_msgs::bad_call");
  CHECK(seen.what() == "bad request");
  CHECK(down_reason == seen);
  CHECK(rec.terminated == 1);
  CHECK(rec.terminate_reason == seen);
}

TEST_CASE("start_server with a name registers the server before start_server returns - a taken name throws",
          "[server][registry]") {
  record rec;
  bool registered = false, same = false, taken_throws = false;
  int via_name = -1;
  auto r = run_node(herd::test::opts(2), [&] {
    auto s = herd::start_server<counter>(herd::spawn_options{.name = "counter"}, &rec, 7);
    auto w = herd::whereis("counter");
    registered = w.has_value();
    same = w && *w == s.id;
    via_name = herd::call<int>(*w, get{});
    try {
      herd::start_server<echo>(herd::server_options{.spawn = {.name = "counter"}});
    } catch (const herd::spawn_error&) {
      taken_throws = true;
    }
    (void)herd::stop_server(s);
    registered = registered && !herd::whereis("counter");
  });
  CHECK(r.is_normal());
  CHECK(registered);
  CHECK(same);
  CHECK(via_name == 7);
  CHECK(taken_throws);
}

TEST_CASE("a constructor that throws: start_server throws init_error with the reason - linked, the caller "
          "gets the exit signal too",
          "[server][exit]") {
  bool init_failed = false;
  herd::exit_reason why;
  herd::exit_reason linked_caller;
  auto r = run_node(herd::test::opts(2), [&] {
    try {
      herd::start_server<failing_ctor>(1);
    } catch (const herd::init_error& e) {
      init_failed = true;
      why = e.reason();
    }
    auto [caller, m] = herd::spawn_monitor([] { herd::start_server_link<failing_ctor>(2); });
    (void)caller;
    herd::receive(herd::when([m = m](const herd::down& d) { return d.ref == m; },
                             [&](herd::down d) { linked_caller = d.reason; }));
  });
  CHECK(r.is_normal());
  CHECK(init_failed);
  CHECK(why.type() == "server_test_msgs::error_in_ctor");
  CHECK(why.what() == "no config");
  CHECK(linked_caller.type() == "server_test_msgs::error_in_ctor");
}

TEST_CASE("a hibernating server answers calls and keeps its state - its stack goes back to the pool",
          "[server][hibernate]") {
  unsigned workers = HERD_WORKERS();
  const int n_servers = 200;
  uint64_t base = 0, idle = 0;
  long sum = 0;
  int asked = -1;
  auto r = herd::test::run_node_with(herd::test::opts(workers), [&](herd::node& n) {
    base = n.runtime().metrics().stacks_in_use;
    std::vector<herd::server_ref<sleeper>> ss;
    for (int i = 0; i < n_servers; ++i)
      ss.push_back(herd::start_server<sleeper>(herd::server_options{.hibernate_after = 0ms}));
    for (int round = 1; round <= 3; ++round) {
      for (auto& s : ss) s.cast(inc{round});
      for (auto& s : ss) sum += s.call(get{});
    }
    herd::test::eventually([&] { return n.runtime().metrics().stacks_in_use < base + n_servers / 10; }, 60s);
    idle = n.runtime().metrics().stacks_in_use;
    // hibernate_now() from a handler, on a server that would not hibernate.
    auto plain = herd::start_server<sleeper>();
    plain.cast(inc{5});
    (void)plain.call(sleep_now{});
    asked = plain.call(get{});
    for (auto& s : ss) (void)herd::stop_server(s);
    (void)herd::stop_server(plain);
  });
  CHECK(r.is_normal());
  CHECK(sum == long(n_servers) * (1 + 3 + 6));
  INFO("stacks in use: base " << base << ", with " << n_servers << " hibernating servers " << idle);
  CHECK(idle < base + n_servers / 10);
  CHECK(asked == 5);
}

TEST_CASE("a server that hibernates after a while idle answers calls before and after", "[server][hibernate]") {
  int a = -1, b = -1;
  bool hibernated = false;
  auto r = run_node(herd::test::opts(2), [&] {
    auto s = herd::start_server<sleeper>(herd::server_options{.hibernate_after = 5ms});
    s.cast(inc{1});
    a = s.call(get{});
    hibernated = herd::test::eventually_hibernated(s, 60s);
    s.cast(inc{1});
    b = s.call(get{});
    (void)herd::stop_server(s);
  });
  CHECK(r.is_normal());
  CHECK(hibernated);
  CHECK(a == 1);
  CHECK(b == 2);
}

TEST_CASE("start_server from a thread outside any process returns at once - the server runs", "[server]") {
  int got = -1;
  std::ptrdiff_t before = herd::node::live_messages();
  {
    herd::node n(herd::test::opts(2));
    auto r = n.run([&] {
      herd::pid me = herd::self();
      std::thread t([&] {
        auto s = herd::start_server<echo>();
        herd::send(me, s.id);
      });
      herd::pid s = herd::receive([](herd::pid p) { return p; });
      t.join();
      got = herd::call<int>(s, 42);
      (void)herd::stop_server(s);
    });
    CHECK(r.is_normal());
  }
  CHECK(herd::node::live_messages() == before);
  CHECK(got == 42);
}

namespace server_test_msgs {
// gen_server's {reply, ok, State} habit: handle_call returns void.
struct setter : herd::server<setter> {
  using calls = herd::types<put, get>;
  void handle_call(const put& p) { n = p.v; }
  int handle_call(get) { return n; }
  int n = 0;
};
}  // namespace server_test_msgs

TEST_CASE("a handle_call that returns void replies herd::ok when it returns - typed and plain calls get it",
          "[server]") {
  int after_typed = 0, after_plain = 0;
  bool typed_is_ok = false;
  auto r = run_node(herd::test::opts(2), [&] {
    auto s = herd::start_server<setter>();
    auto k = s.call(put{7});
    typed_is_ok = std::is_same_v<decltype(k), herd::ok>;  // the reply type server_ref::call gives
    after_typed = s.call(get{});
    (void)herd::call<herd::ok>(s, put{9});
    after_plain = s.call(get{});
    (void)herd::stop_server(s);
  });
  CHECK(r.is_normal());
  CHECK(typed_is_ok);
  CHECK(after_typed == 7);
  CHECK(after_plain == 9);
}
