// The one rule for calls made outside a process (README "Calls made outside a
// process"): every process-only public call, made from a plain thread, throws
// herd::not_in_process naming the call — the same way whether a node runs or
// not — and does nothing else (no process started, no fd leaked). Queries
// about the calling process answer "none" instead.
#include <herd/actors.hpp>
#include <herd/actors/call.hpp>
#include <herd/actors/hibernate.hpp>
#include <herd/actors/server.hpp>
#include <herd/net.hpp>
#include <herd/supervisors/introspect.hpp>
#include <herd/supervisors/supervisor.hpp>

#include <catch2/catch.hpp>

#include "support/node_fixture.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

namespace {

using namespace std::chrono_literals;
namespace sup = herd::supervisor;
namespace net = herd::net;

struct echo : herd::server<echo> {
  using calls = herd::types<int>;
  int handle_call(int x, const herd::from&) { return x; }
};

// What one call made on a plain thread did.
struct outcome {
  bool threw_not_in_process = false;
  std::string call;  // not_in_process::call()
  std::string what;
  std::string other;  // anything else that came out (another exception, a return)
};

outcome on_plain_thread(const std::function<void()>& fn) {
  outcome o;
  std::thread t([&] {
    try {
      fn();
      o.other = "returned";
    } catch (const herd::not_in_process& e) {
      o.threw_not_in_process = true;
      o.call = e.call();
      o.what = e.what();
    } catch (const std::exception& e) {
      o.other = std::string("threw another exception: ") + e.what();
    } catch (...) {
      o.other = "threw a non-std exception";
    }
  });
  t.join();
  return o;
}

void check(const outcome& o, const std::string& name, bool node_runs) {
  INFO("call " << name << (node_runs ? " (a node runs)" : " (no node runs)") << ": " << o.other);
  REQUIRE(o.threw_not_in_process);
  CHECK(o.call == name);
  // The same words for every call: its name first, then the rule, then the way out.
  CHECK(o.what.rfind(name + ": called outside a herd process (on thread '", 0) == 0);
  CHECK(o.what.find("run this code in a process started by herd::node::run or herd::spawn") != std::string::npos);
  CHECK((o.what.find("no node is running") != std::string::npos) == !node_runs);
}

// Runs fn on a plain thread twice: with no node, then while a node runs (the
// thread is started by the root, which waits for it on the blocking pool).
// A pid the call may take: a live process of the node, or an unknown one.
void expect_outside(const std::string& name, const std::function<void(herd::pid)>& fn) {
  check(on_plain_thread([&] { fn(herd::pid{}); }), name, false);
  outcome o;
  herd::test::run_node(herd::test::opts(2), [&] {
    herd::pid idle = herd::spawn([] { herd::receive([](int) {}); });
    o = herd::blocking([&] { return on_plain_thread([&] { fn(idle); }); });
    herd::send(idle, 0);
  });
  check(o, name, true);
}

std::atomic<int> bodies_run{0};

}  // namespace

TEST_CASE("queries about the calling process answer none outside a process", "[outside]") {
  outcome o = on_plain_thread([] {
    if (herd::in_process()) throw std::runtime_error("in_process() is true");
    if (herd::self() != herd::no_pid) throw std::runtime_error("self() is not no_pid");
    if (herd::parent() != herd::no_pid) throw std::runtime_error("parent() is not no_pid");
    if (herd::trapping_exits()) throw std::runtime_error("trapping_exits() is true");
    if (herd::mailbox_size() != 0) throw std::runtime_error("mailbox_size() is not 0");
  });
  CHECK(o.other == "returned");
  bool inside = false;
  herd::test::run_node(herd::test::opts(1), [&] { inside = herd::in_process(); });
  CHECK(inside);
}

// The any-thread side of the rule, with no node at all: sends are dropped
// (nothing could receive them) and nothing crashes — send_after used to
// dereference the missing runtime.
TEST_CASE("with no node running send and send_after from a plain thread drop the message", "[outside]") {
  std::ptrdiff_t before = herd::node::live_messages();
  outcome o = on_plain_thread([] {
    herd::send(herd::pid{}, 1);
    if (herd::send("nobody-has-this-name", 1)) throw std::runtime_error("send by name delivered");
    herd::timer_ref t = herd::send_after(1ms, herd::pid{}, std::string("late"));
    herd::timer_ref n = herd::send_after(1ms, "nobody-has-this-name", 2);
    if (herd::read_timer(t) != -1 || herd::cancel_timer(t)) throw std::runtime_error("a timer was armed");
    if (herd::read_timer(n) != -1 || herd::cancel_timer(n)) throw std::runtime_error("a named timer was armed");
    if (herd::whereis("nobody-has-this-name")) throw std::runtime_error("whereis found a name");
  });
  CHECK(o.other == "returned");
  CHECK(herd::node::live_messages() == before);
}

// Issue 15 item 8: main, holding a node that runs nothing — made but not run
// yet, or after run returned — is no process either, and hears the same rule.
TEST_CASE("in main beside a node that runs nothing (before and after run) the one rule holds", "[outside]") {
  auto in_main = [](const std::function<void()>& fn) {
    outcome o;
    try {
      fn();
      o.other = "returned";
    } catch (const herd::not_in_process& e) {
      o.threw_not_in_process = true;
      o.call = e.call();
      o.what = e.what();
    } catch (const std::exception& e) {
      o.other = std::string("threw another exception: ") + e.what();
    }
    return o;
  };
  auto calls = [&](const char* when) {
    INFO(when);
    check(in_main([] { herd::receive([](int) {}, herd::after(0ms, [] {})); }), "herd::receive", false);
    check(in_main([] { herd::sleep(1ms); }), "herd::sleep", false);
    check(in_main([] { herd::call<int>(herd::pid{}, 1, 10ms); }), "herd::call", false);
    check(in_main([] { (void)sup::start_link({}, {}); }), "herd::supervisor::start_link", false);
  };
  herd::node n(herd::test::opts(1));
  calls("before run");
  n.run([] {});
  calls("after run");
}

// actors: receive.hpp
TEST_CASE("outside a process: herd::receive", "[outside]") {
  expect_outside("herd::receive", [](herd::pid) { herd::receive([](int) {}, herd::after(0ms, [] {})); });
}
TEST_CASE("outside a process: herd::receive_after", "[outside]") {
  expect_outside("herd::receive_after",
                 [](herd::pid) { herd::receive_after(herd::receive_mark{}, [](int) {}, herd::after(0ms, [] {})); });
}
TEST_CASE("outside a process: herd::mark_mailbox", "[outside]") {
  expect_outside("herd::mark_mailbox", [](herd::pid) { (void)herd::mark_mailbox(); });
}

// actors: links.hpp
TEST_CASE("outside a process: herd::link", "[outside]") {
  expect_outside("herd::link", [](herd::pid p) { herd::link(p); });
}
TEST_CASE("outside a process: herd::unlink", "[outside]") {
  expect_outside("herd::unlink", [](herd::pid p) { herd::unlink(p); });
}
TEST_CASE("outside a process: herd::trap_exit", "[outside]") {
  expect_outside("herd::trap_exit", [](herd::pid) { herd::trap_exit(true); });
}
TEST_CASE("outside a process: herd::monitor by pid", "[outside]") {
  expect_outside("herd::monitor", [](herd::pid p) { herd::monitor(p); });
}
TEST_CASE("outside a process: herd::monitor by name", "[outside]") {
  expect_outside("herd::monitor", [](herd::pid) { herd::monitor("nobody-has-this-name"); });
}
TEST_CASE("outside a process: herd::demonitor", "[outside]") {
  expect_outside("herd::demonitor", [](herd::pid) { herd::demonitor(herd::monitor_ref{1}); });
}
TEST_CASE("outside a process: herd::spawn_link starts nothing", "[outside]") {
  bodies_run = 0;
  expect_outside("herd::spawn_link", [](herd::pid) { herd::spawn_link([] { ++bodies_run; }); });
  CHECK(bodies_run == 0);
}
TEST_CASE("outside a process: herd::spawn_monitor starts nothing", "[outside]") {
  bodies_run = 0;
  expect_outside("herd::spawn_monitor", [](herd::pid) { herd::spawn_monitor([] { ++bodies_run; }); });
  CHECK(bodies_run == 0);
}

// actors: call.hpp, server.hpp
TEST_CASE("outside a process: herd::call by pid", "[outside]") {
  expect_outside("herd::call", [](herd::pid p) { herd::call<int>(p, 1, 10ms); });
}
TEST_CASE("outside a process: herd::call by name", "[outside]") {
  expect_outside("herd::call", [](herd::pid) { herd::call<int>("nobody-has-this-name", 1, 10ms); });
}
TEST_CASE("outside a process: herd::server_ref::call", "[outside]") {
  expect_outside("herd::server_ref::call", [](herd::pid p) { herd::server_ref<echo>{p}.call(1, 10ms); });
}
TEST_CASE("outside a process: herd::start_server_link starts nothing", "[outside]") {
  expect_outside("herd::start_server_link", [](herd::pid) { herd::start_server_link<echo>(); });
}
TEST_CASE("outside a process: herd::serve", "[outside]") {
  expect_outside("herd::serve", [](herd::pid) { (void)herd::serve<echo>(); });
}
TEST_CASE("outside a process: herd::stop_server", "[outside]") {
  expect_outside("herd::stop_server", [](herd::pid p) { (void)herd::stop_server(p); });
}

// actors: process.hpp, hibernate.hpp
TEST_CASE("outside a process: herd::exit of self", "[outside]") {
  expect_outside("herd::exit", [](herd::pid) { herd::exit(herd::exit_reason::normal()); });
}
TEST_CASE("outside a process: herd::hibernate destroys its continuation", "[outside]") {
  auto probe = std::make_shared<int>(0);
  expect_outside("herd::hibernate", [&](herd::pid) { herd::hibernate([probe] {}); });
  CHECK(probe.use_count() == 1);
}
TEST_CASE("outside a process: herd::yield", "[outside]") {
  expect_outside("herd::yield", [](herd::pid) { herd::yield(); });
}
TEST_CASE("outside a process: herd::sleep", "[outside]") {
  expect_outside("herd::sleep", [](herd::pid) { herd::sleep(1ms); });
}

// supervisors
TEST_CASE("outside a process: herd::supervisor::start_link", "[outside]") {
  expect_outside("herd::supervisor::start_link", [](herd::pid) { (void)sup::start_link({}, {}); });
}
TEST_CASE("outside a process: herd::supervisor::run", "[outside]") {
  expect_outside("herd::supervisor::run", [](herd::pid) { sup::run({}, {}); });
}
TEST_CASE("outside a process: herd::supervisor::start_child with a spec", "[outside]") {
  expect_outside("herd::supervisor::start_child", [](herd::pid p) {
    (void)sup::start_child(p, sup::child_spec{.id = "c", .start = [] {}});
  });
}
TEST_CASE("outside a process: herd::supervisor::start_child with arguments", "[outside]") {
  expect_outside("herd::supervisor::start_child", [](herd::pid p) { (void)sup::start_child(p, 1); });
}
TEST_CASE("outside a process: herd::supervisor::terminate_child by id", "[outside]") {
  expect_outside("herd::supervisor::terminate_child", [](herd::pid p) { (void)sup::terminate_child(p, "c"); });
}
TEST_CASE("outside a process: herd::supervisor::terminate_child by pid", "[outside]") {
  expect_outside("herd::supervisor::terminate_child", [](herd::pid p) { (void)sup::terminate_child(p, p); });
}
TEST_CASE("outside a process: herd::supervisor::restart_child", "[outside]") {
  expect_outside("herd::supervisor::restart_child", [](herd::pid p) { (void)sup::restart_child(p, "c"); });
}
TEST_CASE("outside a process: herd::supervisor::delete_child", "[outside]") {
  expect_outside("herd::supervisor::delete_child", [](herd::pid p) { (void)sup::delete_child(p, "c"); });
}
TEST_CASE("outside a process: herd::supervisor::which_children", "[outside]") {
  expect_outside("herd::supervisor::which_children", [](herd::pid p) { (void)sup::which_children(p); });
}
TEST_CASE("outside a process: herd::supervisor::count_children", "[outside]") {
  expect_outside("herd::supervisor::count_children", [](herd::pid p) { (void)sup::count_children(p); });
}
TEST_CASE("outside a process: herd::supervisor::stop", "[outside]") {
  expect_outside("herd::supervisor::stop", [](herd::pid p) { (void)sup::stop(p); });
}
TEST_CASE("outside a process: herd::supervisor::children_of", "[outside]") {
  expect_outside("herd::supervisor::children_of", [](herd::pid p) { (void)sup::children_of(p, 10, 10ms); });
}

// net
TEST_CASE("outside a process: herd::net::start_listener binds nothing", "[outside]") {
  expect_outside("herd::net::start_listener", [](herd::pid) {
    (void)net::start_listener("outside", net::listener_options{.bind = "127.0.0.1"}, [](net::tcp_socket) {});
  });
  CHECK(!net::info("outside"));
}
TEST_CASE("outside a process: herd::net::stop_listener", "[outside]") {
  expect_outside("herd::net::stop_listener", [](herd::pid) { (void)net::stop_listener("outside"); });
}
TEST_CASE("outside a process: herd::net::drain_listener", "[outside]") {
  expect_outside("herd::net::drain_listener", [](herd::pid) { (void)net::drain_listener("outside", 10ms); });
}
TEST_CASE("outside a process: herd::net::connections_of", "[outside]") {
  expect_outside("herd::net::connections_of", [](herd::pid p) { (void)net::connections_of(p, 10, 10ms); });
}
TEST_CASE("outside a process: herd::net::tcp_socket::connect", "[outside]") {
  expect_outside("herd::net::tcp_socket::connect",
                 [](herd::pid) { (void)net::tcp_socket::connect("127.0.0.1", 1, 10ms); });
}
TEST_CASE("outside a process: herd::net::tcp_socket::adopt closes the fd", "[outside]") {
  auto unix_fd = [] {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) throw std::runtime_error("socketpair");
    ::close(fds[1]);
    return fds[0];
  };
  expect_outside("herd::net::tcp_socket::adopt", [&](herd::pid) { (void)net::tcp_socket::adopt(unix_fd()); });
  // The fd is adopt's once passed, as on its other failures. Checked with no
  // node: no other thread opens an fd that could take the number meanwhile.
  int fd = unix_fd();
  check(on_plain_thread([&] { (void)net::tcp_socket::adopt(fd); }), "herd::net::tcp_socket::adopt", false);
  errno = 0;
  CHECK(::fcntl(fd, F_GETFD) == -1);
  CHECK(errno == EBADF);
}
TEST_CASE("outside a process: herd::net::start_timer", "[outside]") {
  expect_outside("herd::net::start_timer", [](herd::pid) { (void)net::start_timer(1ms, 7); });
}
