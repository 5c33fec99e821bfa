// herd::pg scopes shared with BEAM's pg (OTP 25's protocol) and with
// another herd node: joins and leaves seen both ways, pg::send reaching a
// member on another node, a killed node's members gone. Peers are real
// erl / pg_node_probe processes, stopped by PID; every wait is bounded.
#include <herd/actors.hpp>
#include <herd/dist/node.hpp>
#include <herd/dist/term.hpp>
#include <herd/dist/term_codec.hpp>
#include <herd/tables/pg.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "fake_node.hpp"
#include "peers.hpp"
#include "support/node_fixture.hpp"
#include "support/skip.hpp"

using namespace std::chrono_literals;
using herd::test::peer_process;

namespace {

const std::string cookie = "herd_pg_dist_cookie";

herd::dist::dist_options dist_opts() { return herd::test::test_node_options("herdpg", cookie); }

std::string etf_atom(const char* a) { return herd::term_to_binary(herd::atom(a)); }

// One member, on another node.
bool one_remote(std::string_view scope, std::string_view group) {
  auto m = herd::pg::get_members(scope, group);
  return m.size() == 1 && m[0].is_remote();
}

// The BEAM side of the two-way test: its member P joins <<"from_beam">>
// (P prints what it is sent), it waits to see herd's member in
// <<"from_herd">>, leaves when told, and waits for herd's member to go.
std::string beam_script(const std::string& herd_node) {
  return R"(S = herd_pg_both, {ok, _} = pg:start(S), register(ctl, self()),
P = spawn(fun() -> receive M -> io:format("got ~p~n", [M]) end, receive stop -> ok end end),
ok = pg:join(S, <<"from_beam">>, P),
true = net_kernel:connect_node(')" + herd_node + R"('),
W = fun W(G, N, 0) -> io:format("timeout ~p~n", [G]), halt(1);
        W(G, N, K) -> case length(pg:get_members(S, G)) of N -> ok; _ -> timer:sleep(20), W(G, N, K - 1) end end,
W(<<"from_herd">>, 1, 3000), io:format("seen_herd ~p~n", [[node(X) || X <- pg:get_members(S, <<"from_herd">>)]]),
receive leave -> ok after 60000 -> halt(1) end,
ok = pg:leave(S, <<"from_beam">>, P),
W(<<"from_herd">>, 0, 3000), io:format("herd_left~n"),
receive stop -> ok after 60000 -> ok end, halt().)";
}

}  // namespace

TEST_CASE("a herd pg scope and a BEAM pg scope see each other's joins and leaves, and pg::send reaches a BEAM member") {
  if (!herd::test::have_erl()) HERD_SKIP("erl is not installed");
  const std::string scope = "herd_pg_both";
  std::string err, out;
  bool seen_beam = false, local_excludes = false, got = false, seen_herd = false, beam_left = false, herd_left = false;
  std::size_t sent = 0;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto me = herd::dist::start(dist_opts());
    if (!me) return void(err = me.error().message());
    (void)herd::pg::get_members(scope, "from_beam");  // makes the scope while distribution runs
    std::string b = herd::test::unique_sname("beampg");
    peer_process erl(herd::test::erl_args(b, cookie, beam_script(*me)));
    std::string beam_node = b + "@" + herd::test::short_host();
    seen_beam = herd::test::eventually([&] { return one_remote(scope, "from_beam"); }, 60s);
    local_excludes = herd::pg::get_local_members(scope, "from_beam").empty();
    sent = herd::pg::send(scope, "from_beam", herd::dist::etf{etf_atom("hello")});
    got = erl.wait_for("got hello");
    herd::pg::join(scope, "from_herd", herd::self());
    seen_herd = erl.wait_for("seen_herd [" + *me + "]");
    herd::dist::send("ctl", beam_node, etf_atom("leave"));
    beam_left = herd::test::eventually([&] { return herd::pg::get_members(scope, "from_beam").empty(); }, 60s);
    (void)herd::pg::leave(scope, "from_herd", herd::self());
    herd_left = erl.wait_for("herd_left");
    out = erl.output();
    herd::dist::stop();
  });
  INFO(err << out);
  CHECK(err.empty());
  CHECK(seen_beam);
  CHECK(local_excludes);
  CHECK(sent == 1);
  CHECK(got);
  CHECK(seen_herd);
  CHECK(beam_left);
  CHECK(herd_left);
}

TEST_CASE("a killed BEAM node's pg members leave the herd scope, which existed before distribution started") {
  if (!herd::test::have_erl()) HERD_SKIP("erl is not installed");
  const std::string scope = "herd_pg_kill";
  std::string err, out;
  bool seen = false, gone = false, told = false;
  herd::test::run_node(herd::test::opts(2), [&] {
    (void)herd::pg::get_members(scope, "doomed");  // the scope exists first
    auto me = herd::dist::start(dist_opts());
    if (!me) return void(err = me.error().message());
    auto mon = herd::pg::monitor(scope, "doomed");
    peer_process erl(herd::test::erl_args(herd::test::unique_sname("beampg"), cookie,
        "{ok, _} = pg:start(herd_pg_kill), P = spawn(fun() -> receive stop -> ok end end), "
        "ok = pg:join(herd_pg_kill, doomed, [P, P]), true = net_kernel:connect_node('" + *me + "'), "
        "io:format(\"joined~n\"), receive stop -> ok after 120000 -> ok end, halt()."));
    // An atom group is listed under its name; joined twice, listed twice.
    seen = herd::test::eventually([&] { return herd::pg::get_members(scope, "doomed").size() == 2; }, 60s);
    erl.kill_now();
    gone = herd::test::eventually([&] { return herd::pg::get_members(scope, "doomed").empty(); }, 60s);
    // The group's monitor is told of both, the join and the leave (events
    // are sent after the member lists change: they may still be on the way).
    int joins = 0, leaves = 0;
    for (bool more = true; more && (joins < 2 || leaves < 2);)
      herd::receive([&](const herd::pg::event& e) { (e.kind == herd::pg::event::join ? joins : leaves) += int(e.pids.size()); },
                    herd::after(30s, [&] { more = false; }));
    told = joins == 2 && leaves == 2;
    out = erl.output();
    herd::dist::stop();
  });
  INFO(err << out);
  CHECK(err.empty());
  CHECK(seen);
  CHECK(gone);
  CHECK(told);
}

TEST_CASE("when a BEAM pg scope process dies and its node stays up, its members leave the herd scope") {
  if (!herd::test::have_erl()) HERD_SKIP("erl is not installed");
  const std::string scope = "herd_pg_crash";
  std::string err, out;
  bool seen = false, gone = false, still_connected = false;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto me = herd::dist::start(dist_opts());
    if (!me) return void(err = me.error().message());
    (void)herd::pg::get_members(scope, "orphaned");
    std::string b = herd::test::unique_sname("beampg");
    std::string beam_node = b + "@" + herd::test::short_host();
    peer_process erl(herd::test::erl_args(b, cookie,
        "{ok, _} = pg:start(herd_pg_crash), register(ctl, self()), P = spawn(fun() -> receive stop -> ok end end), "
        "ok = pg:join(herd_pg_crash, <<\"orphaned\">>, P), true = net_kernel:connect_node('" + *me + "'), "
        "receive crash -> exit(whereis(herd_pg_crash), kill), io:format(\"killed~n\") after 120000 -> ok end, "
        "receive stop -> ok after 120000 -> ok end, halt()."));
    seen = herd::test::eventually([&] { return one_remote(scope, "orphaned"); }, 60s);
    herd::dist::send("ctl", beam_node, etf_atom("crash"));
    if (!erl.wait_for("killed")) err = "the scope was not killed";
    gone = herd::test::eventually([&] { return herd::pg::get_members(scope, "orphaned").empty(); }, 60s);
    auto up = herd::dist::nodes();
    still_connected = std::find(up.begin(), up.end(), beam_node) != up.end();
    out = erl.output();
    herd::dist::stop();
  });
  INFO(err << out);
  CHECK(err.empty());
  CHECK(seen);
  CHECK(gone);
  CHECK(still_connected);  // it was the monitor, not a nodedown
}

TEST_CASE("two herd nodes share a pg group both ways, with no BEAM node but epmd") {
  std::string err, out;
  bool seen = false, got = false, back_joined = false, back_left = false, gone = false;
  const std::string scope = "herd_pg_pair";
  herd::test::run_node(herd::test::opts(2), [&] {
    auto me = herd::dist::start(dist_opts());
    if (!me) return void(err = me.error().message());
    (void)herd::pg::get_members(scope, "probe");
    std::string p = herd::test::unique_sname("pgprobe");
    peer_process probe({HERD_PG_NODE_PROBE, p, cookie, scope});
    if (!probe.wait_for("node ")) return void(err = "the probe did not start");
    std::string probe_node = p + "@" + herd::test::short_host();
    if (auto c = herd::dist::connect(probe_node, 30s); !c) return void(err = c.error().message());
    seen = herd::test::eventually([&] { return one_remote(scope, "probe"); }, 60s);
    herd::pg::send(scope, "probe", herd::dist::etf{etf_atom("hi")});
    got = probe.wait_for("got hi");
    herd::pg::join(scope, "back", herd::self());
    back_joined = probe.wait_for("back join 1");
    (void)herd::pg::leave(scope, "back", herd::self());
    back_left = probe.wait_for("back leave 1");
    probe.kill_now();
    gone = herd::test::eventually([&] { return herd::pg::get_members(scope, "probe").empty(); }, 60s);
    out = probe.output();
    herd::dist::stop();
  });
  INFO(err << out);
  CHECK(err.empty());
  CHECK(seen);
  CHECK(got);
  CHECK(back_joined);
  CHECK(back_left);
  CHECK(gone);
}

TEST_CASE("a new scope process on a peer node replaces the one listed there: its members go before the new one's come") {
  using herd::term;
  using herd::atom;
  const std::string scope = "herd_pg_restart";
  std::string err, events;
  bool first = false, replaced = false, gone = false;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto me = herd::dist::start(dist_opts());
    if (!me) return void(err = me.error().message());
    (void)herd::pg::get_members(scope, "g");  // makes the scope while distribution runs
    if (!herd::test::eventually([&] { return herd::whereis(scope).has_value(); }, 30s))
      return void(err = "the scope process is not registered");
    auto mon = herd::pg::monitor(scope, "g");
    std::map<herd::pid, uint32_t> id_of;  // while connected: a swept pid describes nothing
    auto ids = [&] {
      std::vector<uint32_t> out;
      for (herd::pid p : herd::pg::get_members(scope, "g"))
        if (auto d = herd::dist::describe(p)) out.push_back(id_of[p] = d->id);
      std::sort(out.begin(), out.end());
      return out;
    };
    {
      herd_test_dist::fake_node fake(*me, "pgrestart", cookie);
      if (!fake.sock) return void(err = fake.err);
      auto pid_of = [&](uint32_t id) { return term::pid(herd::erl_pid{atom(fake.id.name), id, 0, fake.id.creation}); };
      auto sync = [&](uint32_t scope_id, uint32_t member) {
        term groups = term::list({term::tuple({term::binary("g"), term::list({pid_of(member)})})});
        return fake.reg_send(scope_id, scope, term::tuple({atom("$gen_cast"), term::tuple({atom("sync"), pid_of(scope_id), groups})}));
      };
      // The scope is <1.0> with member <10.0>; then it is <2.0> (restarted,
      // its DOWN never sent) with member <20.0>.
      if (!sync(1, 10)) return void(err = fake.err);
      first = herd::test::eventually([&] { return ids() == std::vector<uint32_t>{10}; }, 30s);
      if (!sync(2, 20)) return void(err = fake.err);
      replaced = herd::test::eventually([&] { return ids() == std::vector<uint32_t>{20}; }, 30s);
    }
    gone = herd::test::eventually([&] { return herd::pg::get_members(scope, "g").empty(); }, 30s);
    for (int n = 0; n < 4;)
      herd::receive([&](const herd::pg::event& e) {
        ++n;
        events += e.kind == herd::pg::event::join ? " join" : " leave";
        for (herd::pid p : e.pids) events.append(" ").append(std::to_string(id_of.count(p) ? id_of[p] : 0));
      }, herd::after(30s, [&] { n = 4; }));
    herd::dist::stop();
  });
  INFO(err << "\nevents:" << events);
  CHECK(err.empty());
  CHECK(first);
  CHECK(replaced);
  CHECK(gone);
  // Never both at once: the old scope's member left before the new one's joined.
  CHECK(events == " join 10 leave 10 join 20 leave 20");
}
