// A listener's life is its tree's: when the tree ends — stopped, killed,
// past its restart intensity, or with the node — its socket closes and it
// leaves the registry. (A dead tree once left a port that completed
// handshakes nobody took, and a node whose root ended with a listener
// running crashed at the program's exit.)
#include "net_fixture.hpp"

#include "support/subprocess.hpp"

#include <algorithm>
#include <herd/supervisors/supervisor.hpp>

#include <string>

using namespace net_test;
using herd::net::tcp_socket;

namespace net_lifetime_test {

bool listed(std::string_view name) {
  for (const auto& i : herd::net::listeners())
    if (i.name == name) return true;
  return false;
}

// From a process: the listener is gone from the registry and its port
// refuses connections (the socket is closed, not merely unlisted).
bool gone(std::string_view name, uint16_t port) {
  if (!herd::test::eventually([&] { return !herd::net::info(name) && !listed(name); }, 10s)) return false;
  raw_client c;
  return !c.connect(port);
}

}  // namespace net_lifetime_test
using namespace net_lifetime_test;

TEST_CASE("a node whose root ends with its listener running stops the listener with it", "[net][listener][lifetime]") {
  for (const char* mode : {"return", "throw", "killed"}) {
    auto r = herd::test::run_subprocess({HERD_NET_NODE_END_PROBE, mode});
    INFO("mode " << mode << "\nstdout: " << r.out << "\nstderr: " << r.err << "\nsignal " << r.signal);
    REQUIRE(r.exited());
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("listener gone: yes") != std::string::npos);
  }
}

TEST_CASE("a killed listener supervisor closes its port, ends its connections and leaves the registry", "[net][listener][lifetime]") {
  bool closed = false, eof = false, reusable = false;
  herd::test::run_node(node_opts(2), [&] {
    auto l = herd::net::start_listener("killed_sup", {.bind = "127.0.0.1", .acceptors = 3}, [](tcp_socket s) {
      (void)s.recv();  // until the peer or the tree ends it
    });
    REQUIRE(l);
    raw_client c(l->port);
    REQUIRE(herd::test::eventually([] { return herd::net::info("killed_sup")->connections == 1; }));
    herd::exit(l->supervisor, herd::exit_reason::kill());
    closed = gone("killed_sup", l->port);
    eof = c.wait_eof(10000);
    // The name is free again.
    auto again = herd::net::start_listener("killed_sup", {.bind = "127.0.0.1"}, [](tcp_socket) {});
    reusable = again.ok();
    if (again) (void)herd::net::stop_listener("killed_sup");
  });
  CHECK(closed);
  CHECK(eof);
  CHECK(reusable);
}

TEST_CASE("a listener whose acceptors_sup is killed past the restart intensity closes its port", "[net][listener][lifetime]") {
  bool closed = false;
  int kills = 0;
  herd::test::run_node(node_opts(2), [&] {
    auto l = herd::net::start_listener("given_up", {.bind = "127.0.0.1", .acceptors = 2}, [](tcp_socket) {});
    REQUIRE(l);
    // listener_sup allows 10 restarts in 10 s: kill until it gives up.
    herd::pid last;
    const auto limit = std::chrono::steady_clock::now() + 30s;
    while (kills < 30 && herd::net::info("given_up") && std::chrono::steady_clock::now() < limit) {
      herd::pid acceptors_sup;
      try {
        for (const auto& c : herd::supervisor::which_children(l->supervisor))
          if (c.id == "acceptors_sup") acceptors_sup = c.pid;
      } catch (const herd::call_error&) {
        break;  // the supervisor has ended
      }
      if (!acceptors_sup.valid() || acceptors_sup == last) {
        herd::sleep(1ms);  // being restarted: polls which_children
        continue;
      }
      last = acceptors_sup;
      herd::exit(acceptors_sup, herd::exit_reason::kill());
      ++kills;
    }
    closed = gone("given_up", l->port);
  });
  // Each kill is one restart: the successors wait for the old acceptors'
  // names (once, a restart failed while they were still taken, and one kill
  // used up the whole intensity).
  CHECK(kills >= 11);
  CHECK(closed);
}

TEST_CASE("a killed acceptors_sup is restarted once and the listener accepts again", "[net][listener][lifetime]") {
  bool accepted = false, named = false;
  herd::test::run_node(node_opts(2), [&] {
    auto l = herd::net::start_listener("one_kill", {.bind = "127.0.0.1", .acceptors = 4}, [](tcp_socket) {});
    REQUIRE(l);
    herd::pid first;
    for (const auto& c : herd::supervisor::which_children(l->supervisor))
      if (c.id == "acceptors_sup") first = c.pid;
    REQUIRE(first.valid());
    herd::exit(first, herd::exit_reason::kill());
    // Restarted, with every acceptor running under its name again.
    auto restarted = [&] {
      if (!herd::net::info("one_kill")) return false;
      for (const auto& c : herd::supervisor::which_children(l->supervisor))
        if (c.id == "acceptors_sup" && c.pid.valid() && c.pid != first)
          return herd::supervisor::count_children(c.pid).active == 4;
      return false;
    };
    REQUIRE(herd::test::eventually(restarted, 10s));
    // An acceptor takes its name itself once the old holder has gone: a
    // moment after it runs (under a sanitizer on a busy machine, a long one).
    named = herd::test::eventually([&] {
      std::vector<herd::pid> acceptors;
      for (const auto& c : herd::supervisor::which_children(l->supervisor))
        if (c.id == "acceptors_sup")
          for (const auto& a : herd::supervisor::which_children(c.pid)) acceptors.push_back(a.pid);
      for (int i = 0; i < 4; ++i) {
        auto holder = herd::whereis("one_kill_acceptor_" + std::to_string(i));
        if (!holder || std::find(acceptors.begin(), acceptors.end(), *holder) == acceptors.end()) return false;
      }
      return true;
    }, 10s);
    raw_client c(l->port);
    accepted = herd::test::eventually([] {
      auto i = herd::net::info("one_kill");
      return i && i->accepts == 1;
    }, 10s);
    (void)herd::net::stop_listener("one_kill");
  });
  CHECK(named);
  CHECK(accepted);
}
