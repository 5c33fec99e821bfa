// gen_server across nodes (herd/dist/gen.hpp), against real BEAM nodes and a
// second herd node (examples/dist_echo): BEAM calls and casts an exported
// herd::server, a handler that throws, a name not registered; herd calls and
// casts a BEAM gen_server loop, times out, sees nodedown, and calls another
// herd node. BEAM nodes are stopped by PID; every wait is bounded.
#include <herd/actors.hpp>
#include <herd/dist/gen.hpp>
#include <herd/dist/node.hpp>

#include <catch2/catch.hpp>

#include <stdexcept>

#include "peers.hpp"
#include "support/node_fixture.hpp"
#include "support/skip.hpp"

using namespace std::chrono_literals;
using herd::test::peer_process;

namespace {

const std::string cookie = "herd_gencall_cookie";

herd::dist::dist_options dist_opts() { return herd::test::test_node_options("gencall", cookie); }

// Answers a term with {got, Term}; `boom` throws; casts are kept for `casts`.
struct tester : herd::server<tester> {
  using calls = herd::types<herd::term>;
  using casts = herd::types<herd::term>;
  herd::term handle_call(const herd::term& req, const herd::from&) {
    if (req.is_atom(herd::atom("boom"))) throw std::runtime_error("boom requested");
    if (req.is_atom(herd::atom("casts"))) return herd::term::list(std::vector<herd::term>(got.begin(), got.end()));
    return herd::term::tuple({herd::atom("got"), req});
  }
  void handle_cast(const herd::term& m) { got.push_back(m); }
  std::vector<herd::term> got;
};

// A BEAM node running `loop`: a registered process `srv` that answers
// '$gen_call' with gen:reply (OTP's reply path): ping -> pong, count -> the
// casts it had, silent -> no answer (it prints "silent" first), die -> it
// exits with reason `died`.
std::vector<std::string> beam_server(const std::string& sname) {
  return herd::test::erl_args(
      sname, cookie,
      "Loop = fun L(C) ->"
      "  receive"
      "    {'$gen_call', From, ping} -> gen:reply(From, pong), L(C);"
      "    {'$gen_call', From, count} -> gen:reply(From, C), L(C);"
      "    {'$gen_call', _From, silent} -> io:format(\"silent~n\"), L(C);"
      "    {'$gen_call', _From, die} -> exit(died);"
      "    {'$gen_call', From, T} -> gen:reply(From, {echoed, T}), L(C);"
      "    {'$gen_cast', _} -> L(C + 1) "
      "  end "
      "end,"
      "register(srv, spawn(fun() -> Loop(0) end)),"
      "io:format(\"ready~n\"), receive stop -> ok after 120000 -> ok end, halt().");
}

std::string beam_node(const std::string& sname) { return sname + "@" + herd::test::short_host(); }

}  // namespace

TEST_CASE("a BEAM node calls and casts an exported herd::server, sees a handler's throw as the call's exit, and noproc for a name not registered") {
  if (!herd::test::have_erl()) HERD_SKIP("erl is not installed");
  std::string out, err;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto me = herd::dist::start(dist_opts());
    if (!me) return void(err = me.error().message());
    auto s = herd::start_server<tester>(herd::spawn_options{.name = "tester"});
    if (!herd::dist::export_server(s)) return void(err = "export_server refused a local pid");
    peer_process erl(herd::test::erl_args(
        herd::test::unique_sname("beam"), cookie,
        "N = '" + *me + "', T = {any, [1, 2.5], <<\"bin\">>, #{k => self()}},"
        "A = gen_server:call({tester, N}, T, 30000),"
        "gen_server:cast({tester, N}, one), gen_server:cast({tester, N}, {two, 2}),"
        "B = gen_server:call({tester, N}, casts, 30000),"
        "C = (catch gen_server:call({nobody, N}, x, 30000)),"
        "D = (catch gen_server:call({tester, N}, boom, 30000)),"
        "P = fun(X) -> io_lib:print(X, 1, 100000, -1) end,"  // one line, however long
        "io:format(\"result ~s~n\", [P({A =:= {got, T}, B, C})]),"
        "io:format(\"boom ~s~n\", [P(D)]), halt()."));
    erl.wait_exit(120s);
    out = erl.output();
    herd::dist::stop();
  });
  INFO(err << "\nBEAM: " << out);
  CHECK(err.empty());
  CHECK(out.find("result {true,[one,{two,2}],{'EXIT',{noproc,{gen_server,call,[{nobody,") != std::string::npos);
  // The server's exit reason as a remote monitor reports it: {Type, What}.
  CHECK(out.find("boom {'EXIT',{{<<\"") != std::string::npos);
  CHECK(out.find("runtime_error\">>,<<\"boom requested\">>},{gen_server,call,[{tester,") != std::string::npos);
}

TEST_CASE("herd calls and casts a BEAM gen_server, and a call nobody answers times out") {
  if (!herd::test::have_erl()) HERD_SKIP("erl is not installed");
  std::string err, out;
  std::optional<herd::dist::call_result<herd::term>> pong, echoed, count, silent, local;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto me = herd::dist::start(dist_opts());
    if (!me) return void(err = me.error().message());
    std::string b = herd::test::unique_sname("beam");
    peer_process erl(beam_server(b));
    if (!erl.wait_for("ready")) return void(err = "erl did not start: " + erl.output());
    std::string node = beam_node(b);
    pong = herd::dist::call("srv", node, herd::atom("ping"), 30s);
    herd::term t = herd::term::tuple({herd::atom("x"), herd::term::binary("y"), herd::term::parse_integer("123456789012345678901234567890").value()});
    echoed = herd::dist::call("srv", node, t, 30s);
    herd::dist::cast("srv", node, herd::atom("a"));
    herd::dist::cast("srv", node, herd::atom("b"));
    count = herd::dist::call("srv", node, herd::atom("count"), 30s);
    silent = herd::dist::call("srv", node, herd::atom("silent"), 300ms);
    // A call to this node goes to the local server.
    auto s = herd::start_server<tester>(herd::spawn_options{.name = "tester"});
    (void)s;
    local = herd::dist::call("tester", *me, herd::atom("hi"), 30s);
    if (echoed && *echoed && **echoed != herd::term::tuple({herd::atom("echoed"), t})) err = "echoed: " + herd::to_string(**echoed);
    out = erl.output();
    herd::dist::stop();
  });
  INFO(err << "\nBEAM: " << out);
  CHECK(err.empty());
  REQUIRE(pong);
  REQUIRE(*pong);
  CHECK(**pong == herd::term(herd::atom("pong")));
  REQUIRE(echoed);
  CHECK(*echoed);
  REQUIRE(count);
  REQUIRE(*count);
  CHECK(**count == herd::term(2));
  REQUIRE(silent);
  REQUIRE(!*silent);
  CHECK(silent->error().code == herd::dist::call_errc::timeout);
  REQUIRE(local);
  REQUIRE(*local);
  CHECK(**local == herd::term::tuple({herd::atom("got"), herd::atom("hi")}));
}

TEST_CASE("a herd call fails with nodedown when the BEAM node is killed during it") {
  if (!herd::test::have_erl()) HERD_SKIP("erl is not installed");
  std::string err, out;
  std::optional<herd::dist::call_result<herd::term>> r;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto me = herd::dist::start(dist_opts());
    if (!me) return void(err = me.error().message());
    std::string b = herd::test::unique_sname("beam");
    peer_process erl(beam_server(b));
    if (!erl.wait_for("ready")) return void(err = "erl did not start: " + erl.output());
    herd::pid caller = herd::spawn([&, node = beam_node(b)] { r = herd::dist::call("srv", node, herd::atom("silent"), 120s); });
    herd::monitor_ref m = herd::monitor(caller);
    if (!erl.wait_for("silent")) err = "the call did not arrive: " + erl.output();
    erl.kill_now();
    herd::receive(herd::when([&](const herd::down& d) { return d.ref == m; }, [](const herd::down&) {}),
                  herd::after(60s, [&] { err = "the call did not end"; }));
    out = erl.output();
    herd::dist::stop();
  });
  INFO(err << "\nBEAM: " << out);
  CHECK(err.empty());
  REQUIRE(r);
  REQUIRE(!*r);
  CHECK(r->error().code == herd::dist::call_errc::nodedown);
}

TEST_CASE("a herd call monitors the BEAM server - a name not registered is noproc at once, a server that dies mid-call is exited") {
  if (!herd::test::have_erl()) HERD_SKIP("erl is not installed");
  std::string err, out;
  std::optional<herd::dist::call_result<herd::term>> missing, died, after;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto me = herd::dist::start(dist_opts());
    if (!me) return void(err = me.error().message());
    std::string b = herd::test::unique_sname("beam");
    peer_process erl(beam_server(b));
    if (!erl.wait_for("ready")) return void(err = "erl did not start: " + erl.output());
    std::string node = beam_node(b);
    // Long timeouts: without the monitor these would end as timeouts, not noproc / exited.
    missing = herd::dist::call("nobody_here", node, herd::atom("ping"), 120s);
    died = herd::dist::call("srv", node, herd::atom("die"), 120s);
    after = herd::dist::call("srv", node, herd::atom("ping"), 120s);  // srv is gone now
    out = erl.output();
    herd::dist::stop();
  });
  INFO(err << "\nBEAM: " << out);
  CHECK(err.empty());
  REQUIRE(missing);
  REQUIRE(!*missing);
  CHECK(missing->error().code == herd::dist::call_errc::noproc);
  REQUIRE(died);
  REQUIRE(!*died);
  CHECK(died->error().code == herd::dist::call_errc::exited);
  CHECK(died->error().message().find("died") != std::string::npos);
  REQUIRE(after);
  REQUIRE(!*after);
  CHECK(after->error().code == herd::dist::call_errc::noproc);
}

TEST_CASE("a herd node calls and casts another herd node's exported server (dist_echo)") {
  std::string err, echo_out;
  std::optional<herd::dist::call_result<herd::term>> echoed, count;
  herd::test::run_node(herd::test::opts(2), [&] {
    std::string s = herd::test::unique_sname("dist_echo");
    std::string node = s + "@" + herd::test::short_host();
    peer_process echo({HERD_DIST_ECHO, "--sname", s, "--cookie", cookie, "--workers", "1"});
    if (!echo.wait_for("node " + node + "\n")) return void(err = "dist_echo did not start: " + echo.output());
    auto me = herd::dist::start(dist_opts());
    if (!me) return void(err = me.error().message());
    herd::term t = herd::term::map({{herd::atom("k"), herd::term::list({1, 2, 3})}});
    echoed = herd::dist::call("echo", node, t, 30s);
    if (echoed && *echoed && **echoed != t) err = "echoed: " + herd::to_string(**echoed);
    herd::dist::cast("counter", node, herd::atom("one"));
    herd::dist::cast("counter", node, herd::atom("two"));
    count = herd::dist::call("counter", node, herd::atom("count"), 30s);
    echo_out = echo.output();
    herd::dist::stop();
  });
  INFO(err << "\ndist_echo: " << echo_out);
  CHECK(err.empty());
  REQUIRE(echoed);
  CHECK(*echoed);
  REQUIRE(count);
  REQUIRE(*count);
  CHECK(**count == herd::term(2));
}
