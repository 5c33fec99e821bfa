// herd::term across the node boundary: herd::send of a term or of a type with
// the term trait to remote pids and {Name, Node}, etf_message::term()/as<T>()
// on the receiving side, every term type through a BEAM echo both ways, a
// user struct herd -> BEAM -> herd and herd <-> herd, and the bounded frame
// decoder (decode_frame) against malformed frames, alone and over a real
// connection. BEAM nodes and the probe are stopped by PID; waits are bounded.
#include <herd/actors.hpp>
#include <herd/dist/node.hpp>
#include <herd/net/tcp.hpp>

#include <catch2/catch.hpp>

#include <cstdio>
#include <map>
#include <unistd.h>

#include "bytes.hpp"
#include "epmd.hpp"
#include "handshake.hpp"
#include "peers.hpp"
#include "support/node_fixture.hpp"
#include "support/skip.hpp"
#include "wire.hpp"

using namespace std::chrono_literals;
using herd::atom;
using herd::term;
using herd::test::peer_process;

namespace cross {

struct note {
  herd::pid from;
  std::string text;
  int64_t seq = 0;
  std::vector<double> xs;
  std::map<std::string, int64_t> tags;
  friend bool operator==(const note&, const note&) = default;
};
HERD_TERM_RECORD(note, from, text, seq, xs, tags)

struct unmapped {
  int x = 0;
};

}  // namespace cross

namespace {

const std::string cookie = "herd_term_cross_cookie";

herd::dist::dist_options dist_opts(const std::string& base) { return herd::test::test_node_options(base, cookie); }


// Takes the next etf_message (30 s at most); false on a timeout.
bool next_message(herd::dist::etf_message& out) {
  bool got = false;
  herd::receive([&](herd::dist::etf_message& m) { out = std::move(m), got = true; }, herd::after(30s, [] {}));
  return got;
}

const herd::dist::detail::self_id me{"cross@host", 5};

// frame = length(4) 'p' control payload.
std::string control_part(const std::string& frame, const std::string& payload) {
  return frame.substr(4, frame.size() - 4 - payload.size());
}

}  // namespace

TEST_CASE("decode_frame reads the frames this node writes") {
  herd::pid there = herd::dist::intern({"other@host", 7, 1, 3});
  std::string payload = herd::term_to_binary(term::tuple({atom("hi"), 42}));
  auto body = [](const std::string& f) { return f.substr(4); };

  // The decoded views point into the body: it must outlive them.
  const std::string send_body = body(herd::dist::detail::frame_send(me, herd::pid{9, 2}, there, payload, true));
  auto s = herd::dist::detail::decode_frame(me, send_body);
  REQUIRE(s);
  CHECK(s->op == herd::dist::detail::ctl_send_sender);
  CHECK(s->from == herd::pid{9, 2});
  CHECK(s->to == there);
  CHECK(s->payload == payload);

  const std::string reg_body = body(herd::dist::detail::frame_reg_send(me, there, "echo", payload));
  auto r = herd::dist::detail::decode_frame(me, reg_body);
  REQUIRE(r);
  CHECK(r->op == herd::dist::detail::ctl_reg_send);
  CHECK(r->from == there);
  CHECK(r->to_name == "echo");
  herd::dist::etf_message m{r->from, std::string(r->payload)};
  auto t = m.term();
  REQUIRE(t);
  CHECK(*t == term::tuple({atom("hi"), 42}));
}

TEST_CASE("decode_frame refuses malformed control tuples without reading past them") {
  herd::pid there = herd::dist::intern({"other@host", 7, 1, 3});
  std::string payload = herd::term_to_binary(atom("x"));
  std::vector<std::string> frames = {
      herd::dist::detail::frame_send(me, herd::pid{9, 2}, there, payload, true),
      herd::dist::detail::frame_send(me, herd::pid{9, 2}, there, payload, false),
      herd::dist::detail::frame_reg_send(me, there, "a_rather_long_registered_name", payload),
  };
  // Every cut inside the control tuple is refused with a reason (each
  // buffer a copy of exactly the cut, so ASan sees a read past it).
  for (const auto& f : frames) {
    std::string control = control_part(f, payload);
    for (std::size_t n = 0; n < control.size(); ++n) {
      std::string cut = control.substr(0, n);
      std::string why;
      INFO("cut at " << n);
      CHECK_FALSE(herd::dist::detail::decode_frame(me, cut, &why));
      CHECK_FALSE(why.empty());
    }
  }
  const std::string head = std::string("p\x83", 2);
  auto refused = [&](const std::string& body) {
    std::string why;
    bool no = !herd::dist::detail::decode_frame(me, body, &why);
    INFO(why);
    return no && !why.empty();
  };
  // {2, '', Pid} with an atom claiming 200 bytes of 3.
  CHECK(refused(head + std::string("\x68\x03\x61\x02\x77\xc8xyz", 9)));
  // {2, <<4 GiB>>, ...}: a binary longer than the frame.
  CHECK(refused(head + std::string("\x68\x03\x61\x02\x6d\xff\xff\xff\xff\x01\x02", 11)));
  // A list of 4 billion elements, a map of 4 billion pairs.
  CHECK(refused(head + std::string("\x68\x03\x61\x02\x6c\xff\xff\xff\xff\x6a", 10)));
  CHECK(refused(head + std::string("\x68\x03\x61\x02\x74\xff\xff\xff\xff\x6a", 10)));
  // A tuple of more elements than bytes.
  CHECK(refused(head + std::string("\x69\xff\xff\xff\xff\x61\x02", 7)));
  // SEND with one element, REG_SEND with three.
  CHECK(refused(head + std::string("\x68\x01\x61\x02", 4)));
  CHECK(refused(head + std::string("\x68\x03\x61\x06\x6a\x6a", 6)));
  // A pid whose node is not an atom; an unknown tag; a compressed term.
  CHECK(refused(head + std::string("\x68\x03\x61\x02\x6a\x58\x61\x01", 8)));
  CHECK(refused(head + std::string("\x68\x03\x61\x02\xff", 5)));
  CHECK(refused(head + std::string("\x68\x03\x61\x02\x50\x00\x00\x00\x05", 9)));
  // Not pass-through, no version byte.
  CHECK(refused("q"));
  CHECK(refused(std::string("p\x68\x01\x61\x02", 5)));
}

TEST_CASE("a HERD_TERM_RECORD type has a registered encoder and an unmapped type has none") {
  CHECK(herd::detail::find_term_encoder(herd::detail::type_id<cross::note>) != nullptr);
  CHECK(herd::detail::find_term_encoder(herd::detail::type_id<cross::unmapped>) == nullptr);
  using pair_t = std::pair<int64_t, std::string>;
  CHECK(herd::detail::find_term_encoder(herd::detail::type_id<pair_t>) == nullptr);
  herd::enable_remote_send<pair_t>();
  auto enc = herd::detail::find_term_encoder(herd::detail::type_id<pair_t>);
  REQUIRE(enc != nullptr);
  pair_t v{7, "seven"};
  CHECK(enc(&v) == term::tuple({7, term::binary("seven")}));
}

TEST_CASE("every term type round-trips exactly through a BEAM echo, herd-made and BEAM-made") {
  if (!herd::test::have_erl()) HERD_SKIP("erl is not installed");
  std::string err, out;
  bool made_ok = false, mine_ok = false;
  std::string mine_text, back_text;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto me = herd::dist::start(dist_opts("herd"));
    if (!me) return void(err = me.error().message());
    std::string b = herd::test::unique_sname("beam");
    peer_process erl(herd::test::erl_args(
        b, cookie,
        "register(echo, spawn(fun Loop() -> receive {From, T} -> From ! T, Loop() end end)), "
        "register(tester, self()), "
        "Made = {self(), make_ref(), hd(erlang:ports()), fun erlang:abs/1, 'ünïcödé', "
        "1 bsl 100, -(1 bsl 70), 3.25, -0.0, [1, 2 | x], #{a => [b], <<\"k\">> => 1.5}, <<1,2:3>>, <<\"bin\">>, "
        "\"str\", [], {}, 12345678901234567890123, -7, 255, 256, -2147483649}, "
        "io:format(\"ready~n\"), "
        "receive {hello, Herd} -> Herd ! {made, Made}, "
        "  receive Back -> io:format(\"made_back ~p~n\", [Back =:= {made, Made}]) after 30000 -> io:format(\"timeout2~n\") end "
        "after 60000 -> io:format(\"timeout1~n\") end, "
        "receive stop -> ok after 60000 -> ok end, halt()."));
    if (!erl.wait_for("ready")) return void(err = "erl did not start");
    std::string node = b + "@" + herd::test::short_host();
    // BEAM-made terms: decoded here, sent back to the BEAM pid as a term.
    herd::send(herd::dist::name_at{"tester", node}, term::tuple({atom("hello"), herd::to_term(herd::self())}));
    herd::dist::etf_message m;
    if (!next_message(m)) return void(err = "no {made, ...} from BEAM");
    auto made = m.term();
    if (!made) return void(err = made.error().message());
    herd::pid beam_pid = m.from;
    herd::send(beam_pid, *made);
    made_ok = erl.wait_for("made_back true", 60s);
    // herd-made terms, with pids and refs of both nodes, through echo.
    auto self_desc = herd::dist::describe(herd::self());
    term mine = term::tuple({
        herd::to_term(herd::self()), herd::to_term(beam_pid),
        term::reference(herd::erl_ref{atom(*me), self_desc->creation, 3, {1, 2, 3}}),
        (*made)[1],  // a BEAM ref
        atom("ünïcödé ☃"), *term::parse_integer("-123456789012345678901234567890"),
        *term::parse_integer("18446744073709551616"), term(INT64_MIN), term(UINT64_MAX), term(2.5), term(-0.0),
        term(1e300), term::list({1, 2}, atom("tail")),
        term::map({{atom("k"), term()}, {term::binary("b"), 7}, {term::tuple({1}), term(0.5)}}),
        term::bitstring(std::string("\xff\x80", 2), 3), term::binary(std::string("\0\x01", 2)), term::string("h\xc3\xa9llo"),
        term::tuple({}), term(), term::export_fun(atom("lists"), atom("reverse"), 1)});
    herd::send(herd::dist::name_at{"echo", node}, term::tuple({herd::to_term(herd::self()), mine}));
    if (!next_message(m)) return void(err = "no echo of herd's terms");
    auto back = m.term();
    if (!back) return void(err = back.error().message());
    mine_ok = *back == mine;
    mine_text = herd::to_string(mine);
    back_text = herd::to_string(*back);
    out = erl.output();
    erl.kill_now();
    herd::dist::stop();
  });
  INFO(err << "\n" << out << "\nsent " << mine_text << "\nback " << back_text);
  CHECK(err.empty());
  CHECK(made_ok);
  CHECK(mine_ok);
}

TEST_CASE("a user struct crosses herd to BEAM to herd, by name and by pid, and an unmapped type is logged") {
  if (!herd::test::have_erl()) HERD_SKIP("erl is not installed");
  herd::test::log_to_file log("term_cross");
  std::string err, out;
  cross::note sent, got_by_name, got_by_pid;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto me = herd::dist::start(dist_opts("herd"));
    if (!me) return void(err = me.error().message());
    std::string b = herd::test::unique_sname("beam");
    peer_process erl(herd::test::erl_args(
        b, cookie,
        "register(echo, spawn(fun Loop() -> receive {From, T} -> From ! T, Loop() end end)), "
        "io:format(\"ready~n\"), receive stop -> ok after 120000 -> ok end, halt()."));
    if (!erl.wait_for("ready")) return void(err = "erl did not start");
    std::string node = b + "@" + herd::test::short_host();
    sent = cross::note{herd::self(), "h\xc3\xa9llo", -42, {1.5, -0.25}, {{"a", 1}, {"b", 1LL << 40}}};
    herd::send(herd::dist::name_at{"echo", node}, std::pair{herd::self(), sent});
    herd::dist::etf_message m;
    if (!next_message(m)) return void(err = "no echo by name");
    auto n1 = m.as<cross::note>();
    if (!n1) return void(err = n1.error().message());
    got_by_name = *n1;
    herd::pid echo_pid = m.from;
    // By pid, through the send hook: the pair type is registered explicitly.
    herd::enable_remote_send<std::pair<herd::pid, cross::note>>();
    sent.seq = 43;
    herd::send(echo_pid, std::pair{herd::self(), sent});
    if (!next_message(m)) return void(err = "no echo by pid");
    auto n2 = m.as<cross::note>();
    if (!n2) return void(err = n2.error().message());
    got_by_pid = *n2;
    herd::send(echo_pid, cross::unmapped{1});  // logged and dropped
    out = erl.output();
    erl.kill_now();
    herd::dist::stop();
  });
  std::string logged = log.text();
  INFO(err << "\n" << out << "\nlog: " << logged);
  CHECK(err.empty());
  CHECK(got_by_name.text == sent.text);
  CHECK(got_by_name.seq == -42);
  CHECK(got_by_name.from == sent.from);
  CHECK(got_by_name.xs == sent.xs);
  CHECK(got_by_name.tags == sent.tags);
  CHECK(got_by_pid == sent);
  CHECK(logged.find("cross::unmapped cannot be sent") != std::string::npos);
}

TEST_CASE("two herd nodes exchange a user struct by name and by pid") {
  std::string err, probe_out;
  cross::note sent, by_name, by_pid;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto me = herd::dist::start(dist_opts("herd_a"));
    if (!me) return void(err = me.error().message());
    std::string b = herd::test::unique_sname("herd_b");
    herd::test::peer_process probe({HERD_DIST_NODE_PROBE, b, cookie});
    std::string node = b + "@" + herd::test::short_host();
    if (!probe.wait_for("node " + node)) return void(err = "the probe did not start");
    sent = cross::note{herd::self(), "over", 1, {2.0}, {{"k", 3}}};
    herd::send(herd::dist::name_at{"echo", node}, std::pair{herd::self(), sent});
    herd::dist::etf_message m;
    if (!next_message(m)) return void(err = "no echo by name");
    auto n1 = m.as<cross::note>();
    if (!n1) return void(err = n1.error().message());
    by_name = *n1;
    herd::enable_remote_send<std::pair<herd::pid, cross::note>>();
    sent.seq = 2;
    herd::send(m.from, std::pair{herd::self(), sent});
    if (!next_message(m)) return void(err = "no echo by pid");
    auto n2 = m.as<cross::note>();
    if (!n2) return void(err = n2.error().message());
    by_pid = *n2;
    probe_out = probe.output();
    probe.kill_now();
    herd::dist::stop();
  });
  INFO(err << probe_out);
  CHECK(err.empty());
  CHECK(by_name.seq == 1);
  CHECK(by_name.from == sent.from);
  CHECK(by_pid == sent);
}

TEST_CASE("a malformed frame from an authenticated peer closes its connection with a log line") {
  herd::test::log_to_file log("term_cross");
  std::string err;
  bool closed = false, still_serves = false;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto me = herd::dist::start(dist_opts("herd"));
    if (!me) return void(err = me.error().message());
    std::string host = herd::test::short_host();
    auto np = herd::dist::detail::epmd_port_please(host, me->substr(0, me->find('@')));
    if (!np) return void(err = np.error().message());
    auto s = herd::net::tcp_socket::connect(host, np->port, 10s);
    if (!s) return void(err = s.error().message());
    using namespace herd::dist::detail;
    identity fake{herd::test::unique_sname("fake") + "@" + host, cookie, 7,
                  dflag_mandatory | dflag_send_sender | dflag_v4_nc | dflag_dist_monitor};
    auto peer = handshake_connect(*s, fake, *me, 10s);
    if (!peer) return void(err = peer.error().message());
    // SEND whose '' atom claims 200 bytes, then a payload.
    std::string body = std::string("p\x83\x68\x03\x61\x02\x77\xc8xyz", 11);
    std::string frame;
    put32(frame, uint32_t(body.size()));
    frame += body;
    if (auto w = s->send(frame); !w) return void(err = w.error().message());
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!closed && std::chrono::steady_clock::now() < deadline) {
      auto r = s->recv(0, 1s);  // ticks, or the end
      if (!r && r.error().code != herd::net::errc::timeout) closed = true;
    }
    // The node itself goes on: a ping to itself is not a connection, so
    // check that distribution still runs.
    still_serves = herd::dist::this_node() == *me;
    herd::dist::stop();
  });
  std::string logged = log.text();
  INFO(err << "\nlog: " << logged);
  CHECK(err.empty());
  CHECK(closed);
  CHECK(still_serves);
  CHECK(logged.find("a frame this node cannot decode") != std::string::npos);
}
