// Two herd nodes, two OS processes, nothing else but epmd: connect by name,
// exchange messages by registered name and by (remote) pid both ways.
#include <herd/actors.hpp>
#include <herd/dist/node.hpp>

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
