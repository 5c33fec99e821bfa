// Two herd nodes, two OS processes, nothing else but epmd: connect by name,
// exchange messages by registered name and by (remote) pid both ways.
#include <herd/actors.hpp>
#include <herd/dist/node.hpp>
#include <herd/runtime/runtime.hpp>

#include <catch2/catch.hpp>

#include "etf_util.hpp"
#include "peers.hpp"
#include "support/node_fixture.hpp"

using namespace std::chrono_literals;

TEST_CASE("two herd nodes connect through epmd alone and exchange messages by name and by pid") {
  std::string err, probe_out;
  std::vector<std::string> got;
  bool probe_listed = false;
  herd::test::run_node(herd::test::opts(2), [&] {
    herd::dist::dist_options o;
    o.sname = herd::test::unique_sname("herd_a");
    o.cookie = "pair_cookie";
    auto me = herd::dist::start(o);  // starts epmd if none runs
    if (!me) return void(err = me.error().message());
    std::string b = herd::test::unique_sname("herd_b");
    herd::test::peer_process probe({HERD_DIST_NODE_PROBE, b, "pair_cookie"});
    std::string node = b + "@" + herd::test::short_host();
    if (!probe.wait_for("node " + node)) return void(err = "the probe did not start");
    probe_out = probe.output();
    if (auto c = herd::dist::connect(node, 30s); !c) return void(err = c.error().message());
    for (auto& n : herd::dist::nodes()) probe_listed |= n == node;
    herd::pid echo_there;
    auto take = [&](const char* what) {
      herd::receive(
          [&](herd::dist::etf_message& m) {
            got.push_back(herd::test::atom_of(m.bytes));
            echo_there = m.from;
          },
          herd::after(30s, [&] { err = std::string("no answer to ") + what; }));
    };
    herd::dist::send("echo", node, herd::test::etf_pid_atom(herd::self(), "by_name"));
    take("the send by name");
    if (!err.empty() || !echo_there.is_remote()) return void(err += " (no remote sender)");
    herd::send(echo_there, herd::dist::etf{herd::test::etf_pid_atom(herd::self(), "by_pid")});
    take("the send by pid");
    probe.kill_now();
    herd::dist::stop();
  });
  INFO(err << probe_out);
  CHECK(err.empty());
  CHECK(probe_listed);
  CHECK(got == std::vector<std::string>{"by_name", "by_pid"});
}

namespace {

uint64_t node_spins() {
  herd::rt::runtime_metrics m;
  uint64_t n = 0;
  if (herd::rt::current_metrics(m))
    for (auto& w : m.workers) n += w.spins;
  return n;
}

}  // namespace

// dist_options::busy_wait: a node whose own busy_wait is 0 spins while a node
// connection is up (BEAM's schedulers spin by default; the distribution sets
// the runtime's floor), never before the first one; 0 turns it off; a value
// out of range is refused. Counted with the workers' spin metric, not timed.
TEST_CASE("a node spins before it sleeps while a node connection is up, as dist_options::busy_wait says") {
  for (long us : {0L, herd::rt::max_busy_wait.count()}) {
    CAPTURE(us);
    std::string err, probe_out;
    uint64_t before_up = 0, while_up = 0;
    herd::test::run_node(herd::test::opts(2), [&] {
      herd::dist::dist_options o;
      o.sname = herd::test::unique_sname("herd_spin");
      o.cookie = "pair_cookie";
      o.busy_wait = herd::rt::max_busy_wait + std::chrono::microseconds{1};
      auto bad = herd::dist::start(o);
      if (bad || bad.error().code != herd::dist::errc::bad_options ||
          bad.error().message().find("busy_wait must be from 0 to 10000 us") == std::string::npos)
        return void(err = "an out-of-range busy_wait was not refused as bad_options");
      o.busy_wait = std::chrono::microseconds{us};
      if (auto me = herd::dist::start(o); !me) return void(err = me.error().message());
      std::string b = herd::test::unique_sname("herd_spin_b");
      herd::test::peer_process probe({HERD_DIST_NODE_PROBE, b, "pair_cookie"});
      std::string node = b + "@" + herd::test::short_host();
      if (!probe.wait_for("node " + node)) return void(err = "the probe did not start");
      probe_out = probe.output();
      before_up = node_spins();  // the waits above ran the workers dry many times
      if (auto c = herd::dist::connect(node, 30s); !c) return void(err = c.error().message());
      for (int i = 0; i < 50 && err.empty(); ++i) {
        herd::dist::send("echo", node, herd::test::etf_pid_atom(herd::self(), "ping"));
        herd::receive([&](herd::dist::etf_message&) {}, herd::after(30s, [&] { err = "no answer to a ping"; }));
      }
      while_up = node_spins();
      probe.kill_now();
      herd::dist::stop();
    });
    INFO(err << probe_out);
    REQUIRE(err.empty());
    CHECK(before_up == 0);
    if (us == 0)
      CHECK(while_up == 0);
    else
      CHECK(while_up > 0);
  }
}
