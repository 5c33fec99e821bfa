// Links, monitors and exit signals between herd processes and processes on
// real BEAM nodes (and another herd node): both directions, trap_exit or
// not, {name, node} monitors, and noconnection when a node is killed, when
// our own distribution stops, or when a node cannot be reached at all.
// Every BEAM node runs an `agent` that does what a test asks of it and
// prints what its own processes see; peers are stopped by PID.
#include <herd/actors.hpp>
#include <herd/dist/node.hpp>
#include <herd/dist/term_codec.hpp>

#include <catch2/catch.hpp>

#include <stdexcept>
#include <unistd.h>

#include "peers.hpp"
#include "support/node_fixture.hpp"
#include "support/skip.hpp"

using namespace std::chrono_literals;
using herd::atom;
using herd::term;
using herd::test::peer_process;

namespace {

const std::string cookie = "herd_links_test_cookie";

herd::dist::dist_options dist_opts(const std::string& base) { return herd::test::test_node_options(base, cookie); }

// The agent answers {Cmd, From, ...} messages:
//   {victim, From, Name}      a process that exits with R on {die, R}
//                             (registered as Name unless none) -> {victim, V}
//   {watch, From, Pid}        a trapping process links to and monitors Pid and
//                             prints "beam_exit R" / "beam_down R" -> {watching, W}
//   {exit2, Pid, R}           exit(Pid, R)
//   {link_exit, From, Pid, R} a process links to Pid, -> {linked, P}, exits
//                             with R on go
//   {unlink_exit, From, Pid}  links, unlinks, -> {unlinked, P}, exits with
//                             boom on go; when it has ended -> {gone, P}
const char* agent_src =
    "Agent = fun Loop() -> receive "
    "{victim, From, Name} -> V = spawn(fun() -> receive {die, R} -> exit(R) end end), "
    "  case Name of none -> ok; _ -> register(Name, V) end, From ! {victim, V}, Loop(); "
    "{watch, From, Pid} -> spawn(fun() -> process_flag(trap_exit, true), link(Pid), Ref = monitor(process, Pid), "
    "  From ! {watching, self()}, "
    "  W = fun W(0) -> ok; W(N) -> receive {'EXIT', Pid, R} -> io:format(\"beam_exit ~p~n\", [R]), W(N - 1); "
    "    {'DOWN', Ref, process, _, R} -> io:format(\"beam_down ~p~n\", [R]), W(N - 1) end end, W(2) end), Loop(); "
    "{exit2, Pid, R} -> exit(Pid, R), Loop(); "
    "{link_exit, From, Pid, R} -> spawn(fun() -> link(Pid), From ! {linked, self()}, receive go -> exit(R) end end), "
    "  Loop(); "
    "{unlink_exit, From, Pid} -> Me = self(), spawn(fun() -> link(Pid), unlink(Pid), From ! {unlinked, self()}, "
    "  receive go -> Ref = monitor(process, Me), Me ! {watch_end, From, self()}, exit(boom) end end), Loop(); "
    "{watch_end, From, P} -> Ref = monitor(process, P), receive {'DOWN', Ref, _, _, _} -> From ! {gone, P} end, Loop() "
    "end end, register(agent, spawn(Agent)), io:format(\"ready~n\"), "
    "receive stop -> ok after 120000 -> ok end, halt().";

term pid_term(herd::pid p) {
  auto d = herd::dist::describe(p);
  if (!d) throw std::runtime_error("no distribution");
  return term::pid(herd::erl_pid{atom(d->node), d->id, d->serial, d->creation});
}

herd::pid pid_of(const term& t) {
  const herd::erl_pid& e = t.as_pid();
  return herd::dist::intern(herd::dist::remote_pid{std::string(e.node.text()), e.id, e.serial, e.creation});
}

void send_term(herd::pid to, const term& t) { herd::dist::send(to, herd::term_to_binary(t)); }

void to_agent(const std::string& node, const term& t) { herd::dist::send("agent", node, herd::term_to_binary(t)); }

// The next {Tag, ...} from any node (30 s at most, else an exception).
term await(const char* tag) {
  term out;
  bool got = false;
  auto is_tagged = [&](const herd::dist::etf_message& m) {
    auto t = herd::binary_to_term(m.bytes);
    return t && t->is_tuple() && t->size() >= 1 && (*t)[0].is_atom(atom(tag));
  };
  herd::receive(herd::when(is_tagged,
                           [&](herd::dist::etf_message& m) {
                             out = *herd::binary_to_term(m.bytes);
                             got = true;
                           }),
                herd::after(30s, [] {}));
  if (!got) throw std::runtime_error(std::string("no {") + tag + ", ...} within 30 s");
  return out;
}

// The next exit_msg / down (30 s at most).
herd::exit_msg await_exit() {
  std::optional<herd::exit_msg> e;
  herd::receive([&](herd::exit_msg& m) { e = std::move(m); }, herd::after(30s, [] {}));
  if (!e) throw std::runtime_error("no exit_msg within 30 s");
  return *e;
}
herd::down await_down(herd::monitor_ref r) {
  std::optional<herd::down> d;
  herd::receive(herd::when([&](const herd::down& x) { return x.ref == r; }, [&](herd::down& x) { d = std::move(x); }),
                herd::after(30s, [] {}));
  if (!d) throw std::runtime_error("no down within 30 s");
  return *d;
}

// Runs body in a node with distribution started and a BEAM node with the
// agent; what goes wrong lands in err.
template <class F>
void with_beam(std::string& err, std::string& out, F body) {
  herd::test::run_node(herd::test::opts(2), [&] {
    try {
      auto me = herd::dist::start(dist_opts("herd"));
      if (!me) return void(err = me.error().message());
      std::string b = herd::test::unique_sname("beam");
      peer_process erl(herd::test::erl_args(b, cookie, agent_src));
      if (!erl.wait_for("ready")) return void(err = "erl did not start: " + erl.output());
      body(b + "@" + herd::test::short_host(), erl);
      out = erl.output();
    } catch (const std::exception& e) {
      err = e.what();
    }
    herd::dist::stop();
  });
}

}  // namespace

TEST_CASE("a herd process links to a BEAM process: its exit is an exit_msg when trapping, fatal otherwise") {
  if (!herd::test::have_erl()) HERD_SKIP("erl is not installed");
  std::string err, out;
  herd::exit_msg trapped;
  herd::pid victim1;
  herd::exit_reason untrapped;
  with_beam(err, out, [&](const std::string& node, peer_process&) {
    to_agent(node, term::tuple({atom("victim"), pid_term(herd::self()), atom("none")}));
    victim1 = pid_of(await("victim")[1]);
    to_agent(node, term::tuple({atom("victim"), pid_term(herd::self()), atom("none")}));
    herd::pid victim2 = pid_of(await("victim")[1]);
    herd::trap_exit(true);
    herd::link(victim1);
    send_term(victim1, term::tuple({atom("die"), term::tuple({atom("custom"), 42})}));
    trapped = await_exit();
    // Without trap_exit the same exit ends the linked process with its reason.
    auto [p, ref] = herd::spawn_monitor([victim2] {
      herd::link(victim2);
      send_term(victim2, term::tuple({atom("die"), atom("boom")}));
      herd::receive([](const herd::dist::etf_message&) {}, herd::after(60s, [] {}));
    });
    untrapped = await_down(ref).reason;
    herd::trap_exit(false);
  });
  INFO(err << out);
  REQUIRE(err.empty());
  CHECK(trapped.from == victim1);
  CHECK(trapped.reason == herd::exit_reason::error("erlang", "{custom,42}"));
  CHECK(untrapped == herd::exit_reason::error("erlang", "boom"));
}

TEST_CASE("a herd process monitors BEAM processes by pid and by name, demonitors, and exits one with exit/2") {
  if (!herd::test::have_erl()) HERD_SKIP("erl is not installed");
  std::string err, out;
  herd::down by_pid, by_name, unknown;
  herd::pid victim1;
  bool stale_down = false;
  with_beam(err, out, [&](const std::string& node, peer_process&) {
    to_agent(node, term::tuple({atom("victim"), pid_term(herd::self()), atom("none")}));
    victim1 = pid_of(await("victim")[1]);
    to_agent(node, term::tuple({atom("victim"), pid_term(herd::self()), atom("named_victim")}));
    herd::pid victim2 = pid_of(await("victim")[1]);
    herd::monitor_ref r1 = herd::monitor(victim1);
    herd::monitor_ref dropped = herd::monitor(victim1);
    herd::demonitor(dropped);
    send_term(victim1, term::tuple({atom("die"), term::tuple({atom("shutdown"), atom("bye")})}));
    by_pid = await_down(r1);
    // The demonitored one never arrives (its DOWN, if BEAM sent one, would
    // have come before r1's on the same connection).
    herd::receive(herd::when([&](const herd::down& d) { return d.ref == dropped; }, [&](const herd::down&) { stale_down = true; }),
                  herd::after(0ms, [] {}));
    herd::monitor_ref r2 = herd::monitor("named_victim", node);
    herd::exit(victim2, herd::exit_reason::kill());  // EXIT2 kill: untrappable there too
    by_name = await_down(r2);
    unknown = await_down(herd::monitor("nobody_here", node));
  });
  INFO(err << out);
  REQUIRE(err.empty());
  CHECK(by_pid.who == victim1);
  CHECK(by_pid.reason == herd::exit_reason::shutdown("bye"));
  CHECK_FALSE(stale_down);
  CHECK(by_name.who == herd::no_pid);
  CHECK(by_name.reason == herd::exit_reason::killed());
  CHECK(unknown.reason == herd::exit_reason::noproc());
}

TEST_CASE("BEAM processes link to herd processes: exits both ways, exit/2 from BEAM, unlink") {
  if (!herd::test::have_erl()) HERD_SKIP("erl is not installed");
  std::string err, out;
  herd::exit_reason linked_death, killed_by_exit2;
  herd::exit_msg trapped_exit2;
  bool survived_unlink = false;
  with_beam(err, out, [&](const std::string& node, peer_process& erl) {
    herd::pid me = herd::self();
    // 1. A BEAM process links to and monitors a herd process that then fails.
    herd::pid failing = herd::spawn([] {
      herd::receive([](const herd::dist::etf_message&) { throw std::runtime_error("bye"); });
    });
    to_agent(node, term::tuple({atom("watch"), pid_term(me), pid_term(failing)}));
    await("watching");
    send_term(failing, atom("fail"));
    if (!erl.wait_for("beam_exit {<<\"std::runtime_error\">>,<<\"bye\">>}") ||
        !erl.wait_for("beam_down {<<\"std::runtime_error\">>,<<\"bye\">>}"))
      throw std::runtime_error("BEAM did not see the herd process fail");
    // 1b. The same with a shutdown that carries a detail: the link's EXIT and
    // the monitor's DOWN both say {shutdown, <<"bye">>}.
    herd::pid leaving = herd::spawn([] {
      herd::receive([](const herd::dist::etf_message&) { herd::exit(herd::exit_reason::shutdown("bye")); });
    });
    to_agent(node, term::tuple({atom("watch"), pid_term(me), pid_term(leaving)}));
    await("watching");
    send_term(leaving, atom("leave"));
    if (!erl.wait_for("beam_exit {shutdown,<<\"bye\">>}") || !erl.wait_for("beam_down {shutdown,<<\"bye\">>}"))
      throw std::runtime_error("BEAM did not see the herd process shut down with its detail");
    // 2. A BEAM process links to a herd process and exits: the herd process dies.
    auto [quiet, qref] = herd::spawn_monitor([] { herd::receive([](const herd::dist::etf_message&) {}); });
    to_agent(node, term::tuple({atom("link_exit"), pid_term(me), pid_term(quiet), atom("gone_wrong")}));
    send_term(pid_of(await("linked")[1]), atom("go"));
    linked_death = await_down(qref).reason;
    // 3. exit/2 from BEAM: kill ends a process; a trapping one gets exit_msg.
    auto [target, tref] = herd::spawn_monitor([] { herd::receive([](const herd::dist::etf_message&) {}); });
    to_agent(node, term::tuple({atom("exit2"), pid_term(target), atom("kill")}));
    killed_by_exit2 = await_down(tref).reason;
    herd::pid trapper = herd::spawn([me] {
      herd::trap_exit(true);
      herd::send(me, herd::self());
      herd::receive([&](herd::exit_msg& e) { herd::send(me, std::move(e)); });
    });
    herd::receive([](herd::pid) {});  // it traps exits now
    to_agent(node, term::tuple({atom("exit2"), pid_term(trapper), atom("stop_please")}));
    trapped_exit2 = await_exit();
    // 4. Linked, then unlinked: the BEAM process's exit does not reach us.
    herd::pid keeper = herd::spawn([me] {
      herd::receive([&](const herd::dist::etf_message&) { herd::send(me, std::string("alive")); });
    });
    to_agent(node, term::tuple({atom("unlink_exit"), pid_term(me), pid_term(keeper)}));
    send_term(pid_of(await("unlinked")[1]), atom("go"));
    await("gone");
    send_term(keeper, atom("ping"));  // after the (absent) EXIT in keeper's mailbox
    herd::receive([&](const std::string& s) { survived_unlink = s == "alive"; }, herd::after(30s, [] {}));
  });
  INFO(err << out);
  REQUIRE(err.empty());
  CHECK(linked_death == herd::exit_reason::error("erlang", "gone_wrong"));
  CHECK(killed_by_exit2 == herd::exit_reason::killed());
  CHECK(trapped_exit2.from.is_remote());
  CHECK(trapped_exit2.reason == herd::exit_reason::error("erlang", "stop_please"));
  CHECK(survived_unlink);
}

TEST_CASE("a BEAM node killed by PID: herd links and monitors to its processes fire with noconnection") {
  if (!herd::test::have_erl()) HERD_SKIP("erl is not installed");
  std::string err, out;
  herd::exit_msg trapped;
  herd::down by_pid, by_name;
  herd::exit_reason untrapped;
  herd::pid victim;
  with_beam(err, out, [&](const std::string& node, peer_process& erl) {
    to_agent(node, term::tuple({atom("victim"), pid_term(herd::self()), atom("victim")}));
    victim = pid_of(await("victim")[1]);
    herd::trap_exit(true);
    herd::link(victim);
    herd::monitor_ref r1 = herd::monitor(victim);
    herd::monitor_ref r2 = herd::monitor("victim", node);
    auto [p, ref] = herd::spawn_monitor([victim, me = herd::self()] {
      herd::link(victim);
      herd::send(me, std::string("linked"));
      herd::receive([](const herd::dist::etf_message&) {});
    });
    herd::receive([](const std::string&) {});
    // A round trip through the agent: the LINK and MONITOR_P frames, written
    // before, have reached the BEAM node.
    to_agent(node, term::tuple({atom("victim"), pid_term(herd::self()), atom("none")}));
    await("victim");
    erl.kill_now();
    trapped = await_exit();
    by_pid = await_down(r1);
    by_name = await_down(r2);
    untrapped = await_down(ref).reason;
    herd::trap_exit(false);
  });
  INFO(err << out);
  REQUIRE(err.empty());
  CHECK(trapped.from == victim);
  CHECK(trapped.reason == herd::exit_reason::noconnection());
  CHECK(by_pid.who == victim);
  CHECK(by_pid.reason == herd::exit_reason::noconnection());
  CHECK(by_name.reason == herd::exit_reason::noconnection());
  CHECK(untrapped == herd::exit_reason::noconnection());
}

TEST_CASE("herd's distribution stops: BEAM processes linked to and monitoring herd processes see noconnection") {
  if (!herd::test::have_erl()) HERD_SKIP("erl is not installed");
  std::string err, out;
  bool beam_saw = false;
  herd::exit_reason held_by;
  with_beam(err, out, [&](const std::string& node, peer_process& erl) {
    auto [held, ref] = herd::spawn_monitor([] { herd::receive([](const herd::dist::etf_message&) {}); });
    to_agent(node, term::tuple({atom("watch"), pid_term(herd::self()), pid_term(held)}));
    await("watching");
    herd::dist::stop();
    beam_saw = erl.wait_for("beam_exit noconnection") && erl.wait_for("beam_down noconnection");
    // The BEAM watcher's link is gone with the connection: held got noconnection too.
    held_by = await_down(ref).reason;
  });
  INFO(err << out);
  REQUIRE(err.empty());
  CHECK(beam_saw);
  CHECK(held_by == herd::exit_reason::noconnection());
}

TEST_CASE("a link or monitor to a node that cannot be reached fires at once with noconnection") {
  if (!herd::test::have_erl()) HERD_SKIP("erl (and its epmd) is not installed");
  std::string err;
  herd::exit_msg linked;
  herd::down by_pid, by_name;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto me = herd::dist::start(dist_opts("herd"));
    if (!me) return void(err = me.error().message());
    std::string nowhere = herd::test::unique_sname("nobody_runs_this") + "@" + herd::test::short_host();
    herd::pid there = herd::dist::intern(herd::dist::remote_pid{nowhere, 42, 0, 7});
    herd::trap_exit(true);
    herd::link(there);
    herd::monitor_ref r1 = herd::monitor(there);
    herd::monitor_ref r2 = herd::monitor("somebody", nowhere);
    try {
      linked = await_exit();
      by_pid = await_down(r1);
      by_name = await_down(r2);
    } catch (const std::exception& e) {
      err = e.what();
    }
    herd::trap_exit(false);
    herd::dist::stop();
  });
  REQUIRE(err.empty());
  CHECK(linked.reason == herd::exit_reason::noconnection());
  CHECK(by_pid.reason == herd::exit_reason::noconnection());
  CHECK(by_pid.who.is_remote());
  CHECK(by_name.reason == herd::exit_reason::noconnection());
}

TEST_CASE("two herd nodes link and monitor each other's processes, and see noconnection when one is killed") {
  if (!herd::test::have_erl()) HERD_SKIP("erl (and its epmd) is not installed");
  std::string err, probe_out;
  herd::exit_msg from_probe, lost;
  herd::down lost_monitor;
  herd::test::run_node(herd::test::opts(2), [&] {
    try {
      auto opts = dist_opts("herd_a");
      opts.net_ticktime = 600s;
      auto me = herd::dist::start(opts);
      if (!me) return void(err = me.error().message());
      std::string b = herd::test::unique_sname("herd_b");
      peer_process probe({HERD_DIST_LINK_PROBE, b, cookie, "600000"});
      std::string node = b + "@" + herd::test::short_host();
      if (!probe.wait_for("node " + node)) return void(err = "the probe did not start");
      // Not connected first: the first send connects, and its frame waits in
      // the connection's queue through the handshake. Both nodes tick only
      // every 150 s, so a frame that waited for the next tick (as it once
      // did at 15 s) would miss await's 30 s.
      herd::trap_exit(true);
      // The probe's `linker` links to us, then we to a fresh process there.
      herd::dist::send("linker", node, herd::term_to_binary(term::tuple({atom("link"), pid_term(herd::self())})));
      herd::pid linker = pid_of(await("linked")[1]);
      herd::link(linker);
      herd::monitor_ref r = herd::monitor(linker);
      // One of ours linked to linker exits: the probe prints what its linker saw.
      auto [h, href] = herd::spawn_monitor([linker] {
        herd::link(linker);
        herd::exit(herd::exit_reason::shutdown("bye"));
      });
      (void)await_down(href);
      if (!probe.wait_for("probe_exit {shutdown, bye}")) throw std::runtime_error("the probe saw no exit");
      // exit/2 from the probe's side: linker exits us... we trap it.
      herd::dist::send("linker", node, herd::term_to_binary(term::tuple({atom("exit2"), pid_term(herd::self())})));
      from_probe = await_exit();
      probe.kill_now();
      lost = await_exit();
      lost_monitor = await_down(r);
      herd::trap_exit(false);
      probe_out = probe.output();
    } catch (const std::exception& e) {
      err = e.what();
    }
    herd::dist::stop();
  });
  INFO(err << probe_out);
  REQUIRE(err.empty());
  CHECK(from_probe.from.is_remote());
  CHECK(from_probe.reason == herd::exit_reason::error("std::runtime_error", "told to"));
  CHECK(lost.reason == herd::exit_reason::noconnection());
  CHECK(lost_monitor.reason == herd::exit_reason::noconnection());
}
