// A herd node beside real BEAM nodes (erl), on this host: ping both ways,
// messages both ways by name and by pid, wrong cookies refused, and a lost
// node noticed (killed, or silent past net_ticktime). Each BEAM node is
// stopped by PID; every wait is bounded and polled.
#include <herd/actors.hpp>
#include <herd/dist/node.hpp>

#include <catch2/catch.hpp>

#include <csignal>
#include <fstream>
#include <stdexcept>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "etf_util.hpp"
#include "peers.hpp"
#include "remote_pids.hpp"
#include "support/node_fixture.hpp"
#include "support/scale.hpp"
#include "support/skip.hpp"

using namespace std::chrono_literals;
using herd::test::peer_process;

namespace {

const std::string cookie = "herd_dist_test_cookie";

herd::dist::dist_options dist_opts(const std::string& base) { return herd::test::test_node_options(base, cookie); }

// A BEAM node that says "ready" and waits to be killed.
std::vector<std::string> idle_beam(const std::string& sname, const std::string& c,
                                   const std::string& extra_eval = "") {
  return herd::test::erl_args(sname, c, extra_eval + "io:format(\"ready~n\"), receive stop -> ok after 120000 -> ok end, halt().");
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Registered as "echo": {From, T} -> T to From.
void echo_process() {
  herd::register_name("echo", herd::self());
  for (;;)
    herd::receive([](herd::dist::etf_message& m) {
      herd::pid from;
      std::string term;
      if (herd::test::split_from(m.bytes, from, term)) herd::dist::send(from, std::move(term));
    });
}

}  // namespace

TEST_CASE("a BEAM node pings a herd node and gets pong") {
  if (!herd::test::have_erl()) HERD_SKIP("erl is not installed");
  std::string out, err;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto me = herd::dist::start(dist_opts("herd"));
    if (!me) return void(err = me.error().message());
    peer_process erl(herd::test::erl_args(herd::test::unique_sname("beam"), cookie,
                                          "io:format(\"~p~n\", [net_adm:ping('" + *me + "')]), halt()."));
    erl.wait_exit(60s);
    out = erl.output();
    herd::dist::stop();
  });
  INFO(err << out);
  CHECK(err.empty());
  CHECK(out.find("pong") != std::string::npos);
}

TEST_CASE("a herd node pings a BEAM node and gets pong, and lists it in nodes()") {
  if (!herd::test::have_erl()) HERD_SKIP("erl is not installed");
  std::string err, out;
  bool pong = false, listed = false;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto me = herd::dist::start(dist_opts("herd"));
    if (!me) return void(err = me.error().message());
    std::string b = herd::test::unique_sname("beam");
    peer_process erl(idle_beam(b, cookie));
    if (!erl.wait_for("ready")) return void(err = "erl did not start");
    std::string node = b + "@" + herd::test::short_host();
    pong = herd::dist::ping(node, 30s);
    for (auto& n : herd::dist::nodes()) listed |= n == node;
    out = erl.output();
    herd::dist::stop();
  });
  INFO(err << out);
  CHECK(err.empty());
  CHECK(pong);
  CHECK(listed);
}

TEST_CASE("a BEAM node's message to echo on a herd node comes back unchanged") {
  if (!herd::test::have_erl()) HERD_SKIP("erl is not installed");
  std::string out, err;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto me = herd::dist::start(dist_opts("herd"));
    if (!me) return void(err = me.error().message());
    herd::pid echo = herd::spawn(echo_process);
    if (!herd::test::eventually([] { return herd::whereis("echo").has_value(); })) return void(err = "no echo");
    std::string t = "{hello, [1,2,3], <<\"bin\">>, 3.5, #{k => \"v\"}, 'ünïcode', 123456789012345678901234567890}";
    peer_process erl(herd::test::erl_args(
        herd::test::unique_sname("beam"), cookie,
        "T = " + t + ", {echo, '" + *me + "'} ! {self(), T}, "
        "receive M -> io:format(\"~p~n\", [M =:= T]) after 30000 -> io:format(\"timeout~n\") end, halt()."));
    erl.wait_exit(60s);
    out = erl.output();
    herd::exit(echo, herd::exit_reason::kill());
    herd::dist::stop();
  });
  INFO(err << out);
  CHECK(err.empty());
  CHECK(out.find("true") != std::string::npos);
}

TEST_CASE("a herd process sends to a name on a BEAM node and to a BEAM pid") {
  if (!herd::test::have_erl()) HERD_SKIP("erl is not installed");
  std::string out, err;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto me = herd::dist::start(dist_opts("herd"));
    if (!me) return void(err = me.error().message());
    std::string b = herd::test::unique_sname("beam");
    peer_process erl(herd::test::erl_args(
        b, cookie,
        "register(sink, self()), io:format(\"ready~n\"), "
        "receive {from_herd, P} -> P ! {ack, self()}, "
        "  receive M -> io:format(\"got ~p~n\", [M]) after 30000 -> io:format(\"timeout2~n\") end "
        "after 30000 -> io:format(\"timeout1~n\") end, halt()."));
    if (!erl.wait_for("ready")) return void(err = "erl did not start");
    std::string node = b + "@" + herd::test::short_host();
    // Connects on first use.
    if (!herd::dist::send("sink", node, herd::test::etf_tagged_pid("from_herd", herd::self())))
      return void(err = "send to {sink, node} refused");
    herd::receive(
        [&](herd::dist::etf_message& m) {
          if (!m.from.is_remote()) return void(err = "no sender on {ack, Pid}: " + m.from.to_string());
          // herd::send to a remote pid goes through the hook in detail::deliver.
          herd::send(m.from, herd::dist::etf{herd::test::etf_atom("done")});
        },
        herd::after(30s, [&] { err = "no ack from the BEAM node"; }));
    erl.wait_exit(60s);
    out = erl.output();
    herd::dist::stop();
  });
  INFO(err << out);
  CHECK(err.empty());
  CHECK(out.find("got done") != std::string::npos);
}

TEST_CASE("a burst larger than the socket's buffers reaches a BEAM node whole, in order of sending") {
  // 32 MiB sent at once (16 small scale): the kernel refuses most of it at
  // first, and the connection must write the rest as the socket drains
  // (tcp_writable; without it the test waits out its bound and fails).
  if (!herd::test::have_erl()) HERD_SKIP("erl is not installed");
  const int count = int(herd::test::scaled(2000, 1000));
  constexpr std::size_t size = 16384;
  std::string out, err;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto me = herd::dist::start(dist_opts("herd"));
    if (!me) return void(err = me.error().message());
    std::string b = herd::test::unique_sname("beam");
    peer_process erl(herd::test::erl_args(
        b, cookie,
        "register(sink, self()), io:format(\"ready~n\"), "
        "Loop = fun L(0, B, _) -> B; L(N, B, Want) -> receive <<Want:32, _/binary>> = X -> "
        "L(N - 1, B + byte_size(X), Want + 1); Other -> {bad, Want, Other} after 60000 -> {timeout, N} end end, "
        "io:format(\"got ~p~n\", [Loop(" + std::to_string(count) + ", 0, 0)]), halt()."));
    if (!erl.wait_for("ready")) return void(err = "erl did not start");
    std::string node = b + "@" + herd::test::short_host();
    for (uint32_t i = 0; i < uint32_t(count); ++i) {
      std::string etf{char(131), char(109)};  // BINARY_EXT: a 4-byte length, then the bytes
      for (int k = 3; k >= 0; --k) etf.push_back(char((size >> (8 * k)) & 0xff));
      for (int k = 3; k >= 0; --k) etf.push_back(char((i >> (8 * k)) & 0xff));  // the sequence number
      etf.append(size - 4, 'x');
      if (!herd::dist::send("sink", node, std::move(etf))) return void(err = "send refused at " + std::to_string(i));
    }
    int status = 0;
    if (!erl.wait_exit(120s, &status)) err = "the BEAM node did not finish";
    // Said apart from a wrong count: CI saw beam.smp segfault here once
    // (dmesg, session 13), and 60 reruns under load did not repeat it.
    else if (WIFSIGNALED(status)) err = "the BEAM node died of signal " + std::to_string(WTERMSIG(status));
    out = erl.output();
    herd::dist::stop();
  });
  INFO(err << "\nthe BEAM node's output:\n" << out);
  CHECK(err.empty());
  CHECK(out.find("got " + std::to_string(count * size)) != std::string::npos);
}

TEST_CASE("a wrong cookie is refused in both directions, with a log line on the herd side") {
  if (!herd::test::have_erl()) HERD_SKIP("erl is not installed");
  std::string log_path = "/tmp/herd_dist_cookie_test_" + std::to_string(::getpid()) + ".log";
  REQUIRE(herd::set_log_file(log_path));
  std::string beam_out, err;
  bool herd_ping = true;
  bool logged_in = false, logged_out = false;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto me = herd::dist::start(dist_opts("herd"));
    if (!me) return void(err = me.error().message());
    // BEAM -> herd with another cookie.
    peer_process in(herd::test::erl_args(herd::test::unique_sname("beam"), "not_the_cookie",
                                         "io:format(\"~p~n\", [net_adm:ping('" + *me + "')]), halt()."));
    in.wait_exit(60s);
    beam_out = in.output();
    logged_in = herd::test::eventually([&] { return read_file(log_path).find("wrong cookie") != std::string::npos; }, 30s);
    // herd -> BEAM with another cookie.
    std::string b = herd::test::unique_sname("beam");
    peer_process out(idle_beam(b, "not_the_cookie"));
    if (!out.wait_for("ready")) return void(err = "erl did not start");
    herd_ping = herd::dist::ping(b + "@" + herd::test::short_host(), 30s);
    logged_out = herd::test::eventually([&] { return read_file(log_path).find("cookie differs") != std::string::npos; }, 30s);
    herd::dist::stop();
  });
  herd::set_log_stderr();
  std::string log = read_file(log_path);
  ::unlink(log_path.c_str());
  INFO(err << beam_out << "\nherd log:\n" << log);
  CHECK(err.empty());
  CHECK(beam_out.find("pang") != std::string::npos);
  CHECK(logged_in);
  CHECK_FALSE(herd_ping);
  CHECK(logged_out);
}

TEST_CASE("a killed BEAM node leaves nodes() and monitor_node holders get nodedown") {
  if (!herd::test::have_erl()) HERD_SKIP("erl is not installed");
  std::string err;
  bool down = false, listed_before = false, listed_after = true;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto me = herd::dist::start(dist_opts("herd"));
    if (!me) return void(err = me.error().message());
    std::string b = herd::test::unique_sname("beam");
    peer_process erl(idle_beam(b, cookie));
    if (!erl.wait_for("ready")) return void(err = "erl did not start");
    std::string node = b + "@" + herd::test::short_host();
    if (auto c = herd::dist::connect(node, 30s); !c) return void(err = c.error().message());
    herd::dist::monitor_node(node, true);
    for (auto& n : herd::dist::nodes()) listed_before |= n == node;
    erl.kill_now();
    herd::receive(herd::when([&](const herd::dist::nodedown& d) { return d.node == node; },
                             [&](const herd::dist::nodedown&) { down = true; }),
                  herd::after(60s, [] {}));
    listed_after = false;
    for (auto& n : herd::dist::nodes()) listed_after |= n == node;
    herd::dist::stop();
  });
  INFO(err);
  CHECK(err.empty());
  CHECK(listed_before);
  CHECK(down);
  CHECK_FALSE(listed_after);
}

TEST_CASE("a BEAM node that stops answering misses its ticks and goes down after net_ticktime") {
  if (!herd::test::have_erl()) HERD_SKIP("erl is not installed");
  std::string err;
  bool down = false;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto o = dist_opts("herd");
    o.net_ticktime = 2000ms;
    auto me = herd::dist::start(o);
    if (!me) return void(err = me.error().message());
    std::string b = herd::test::unique_sname("beam");
    std::vector<std::string> args = idle_beam(b, cookie);
    args.insert(args.begin() + 1, {"-kernel", "net_ticktime", "2"});
    peer_process erl(args);
    if (!erl.wait_for("ready")) return void(err = "erl did not start");
    std::string node = b + "@" + herd::test::short_host();
    if (auto c = herd::dist::connect(node, 30s); !c) return void(err = c.error().message());
    herd::dist::monitor_node(node, true);
    erl.signal(SIGSTOP);  // the socket stays open: only the ticks stop
    herd::receive(herd::when([&](const herd::dist::nodedown& d) { return d.node == node; },
                             [&](const herd::dist::nodedown&) { down = true; }),
                  herd::after(60s, [] {}));
    erl.kill_now();
    herd::dist::stop();
  });
  INFO(err);
  CHECK(err.empty());
  CHECK(down);
}

TEST_CASE("a BEAM process monitoring a herd process gets DOWN with its reason, and noproc for an unknown name") {
  if (!herd::test::have_erl()) HERD_SKIP("erl is not installed");
  std::string out, err;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto me = herd::dist::start(dist_opts("herd"));
    if (!me) return void(err = me.error().message());
    herd::pid victim = herd::spawn([] {
      herd::register_name("victim", herd::self());
      herd::receive([](const herd::dist::etf_message&) { throw std::runtime_error("boom"); });
    });
    if (!herd::test::eventually([] { return herd::whereis("victim").has_value(); })) return void(err = "no victim");
    peer_process erl(herd::test::erl_args(
        herd::test::unique_sname("beam"), cookie,
        "N = '" + *me + "',"
        "R1 = (catch gen_server:call({nobody, N}, hi, 30000)),"
        "M = monitor(process, {victim, N}),"
        "{victim, N} ! {self(), die},"
        "R2 = receive {'DOWN', M, process, _, Reason} -> Reason after 30000 -> timeout end,"
        "io:format(\"result ~p ~p~n\", [element(1, element(2, R1)), R2]), halt()."));
    erl.wait_exit(60s);
    out = erl.output();
    herd::exit(victim, herd::exit_reason::kill());
    herd::dist::stop();
  });
  INFO(err << out);
  CHECK(err.empty());
  CHECK(out.find("result noproc {<<\"std::runtime_error\">>,<<\"boom\">>}") != std::string::npos);
}

TEST_CASE("pids of 100,000 node names a BEAM node sends leave no node records once it is gone, and count against its connection") {
  if (!herd::test::have_erl()) HERD_SKIP("erl is not installed");
  namespace dd = herd::dist::detail;
  std::string err, out;
  constexpr uint32_t per_message = 1000, messages = 100, names = per_message * messages;
  std::size_t recs_before = 0, pids_before = 0, recs_with = 0, held_with = 0, recs_after = 1, pids_after = 1;
  uint32_t mapped = 0;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto o = dist_opts("herd");
    o.max_atoms_per_connection = 0;  // the 100,000 node names are new atoms here
    auto me = herd::dist::start(o);
    if (!me) return void(err = me.error().message());
    herd::register_name("pid_sink", herd::self());
    dd::sweep_remote_pids({}, {});
    dd::sweep_remote_pids({}, {});
    recs_before = dd::node_record_count();
    pids_before = dd::remote_pid_count();
    std::string b = herd::test::unique_sname("beam");
    // Pids of nodes that do not exist, made as a peer can: NEW_PID_EXT
    // around an atom, through binary_to_term.
    peer_process erl(idle_beam(b, cookie,
        "H = '" + *me + "', S = \"" + b + "_\","
        "Mk = fun(I) -> <<131, A/binary>> = term_to_binary(list_to_atom(S ++ integer_to_list(I) ++ \"@nowhere\")),"
        "  binary_to_term(<<131, 88, A/binary, 1:32, 0:32, 1:32>>) end,"
        "lists:foreach(fun(M) -> {pid_sink, H} ! [Mk(M * " + std::to_string(per_message) + " + J) || J <- lists:seq(1, " +
        std::to_string(per_message) + ")] end, lists:seq(0, " + std::to_string(messages - 1) + ")),"));
    for (uint32_t got = 0; got < messages; ++got) {
      bool in_time = herd::receive([&](herd::dist::etf_message& m) {
        auto pids = m.as<std::vector<herd::pid>>();
        if (!pids) {
          err = pids.error().message();
          return true;
        }
        for (herd::pid p : *pids) mapped += p.is_remote();
        return true;
      }, herd::after(60s, [] { return false; }));
      if (!in_time) return void(err = "messages missing: " + std::to_string(got));
    }
    std::string node = b + "@" + herd::test::short_host();
    recs_with = dd::node_record_count();
    held_with = dd::pids_held_by(dd::node_number(node));
    erl.kill_now();
    if (!herd::test::eventually([&] {
          for (auto& n : herd::dist::nodes())
            if (n == node) return false;
          return true;
        }, 60s))
      return void(err = "the BEAM node is still connected");
    out = erl.output();
    dd::sweep_remote_pids({}, {});
    dd::sweep_remote_pids({}, {});
    recs_after = dd::node_record_count();
    pids_after = dd::remote_pid_count();
    herd::dist::stop();
  });
  INFO(err << "\nBEAM: " << out);
  CHECK(err.empty());
  CHECK(mapped == names);
  CHECK(recs_with >= recs_before + names);
  CHECK(held_with >= names);
  CHECK(recs_after == recs_before);  // the BEAM node's own went too once nothing named it
  CHECK(pids_after == pids_before);
}
