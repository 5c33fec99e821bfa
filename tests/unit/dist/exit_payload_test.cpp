// DFLAG_EXIT_PAYLOAD (OTP 22+), which herd announces: to a peer that
// announces it too, exit signals go in the payload forms — PAYLOAD_EXIT {24,
// From, To}, PAYLOAD_EXIT2 {26, From, To} and PAYLOAD_MONITOR_P_EXIT {28,
// FromProc, To, Ref} with the reason as the frame's payload; to a peer
// without it, EXIT {3, ...}, EXIT2 {8, ...} and MONITOR_P_EXIT {21, ...}
// with the reason in the control message. The peer is a fake node in this
// process (fake_node.hpp), so every frame is read as written.
#include <herd/actors.hpp>
#include <herd/dist/node.hpp>

#include <catch2/catch.hpp>

#include <map>

#include "fake_node.hpp"
#include "peers.hpp"
#include "support/node_fixture.hpp"

using namespace std::chrono_literals;
using herd::atom;
using herd::term;
namespace dd = herd::dist::detail;
using herd_test_dist::fake_node;

namespace {

const std::string cookie = "herd_exit_payload_cookie";

struct seen_frame {
  term control;
  std::optional<term> payload;
};

struct payload_seen {
  std::string err;
  std::map<long, seen_frame> by_op;  // frames from different senders: compared as a set
};

payload_seen run_case(bool peer_has_exit_payload) {
  payload_seen out;
  herd::test::run_node(herd::test::opts(1), [&] {
    auto me = herd::dist::start(herd::test::test_node_options("exitpayload", cookie));
    if (!me) return void(out.err = me.error().message());
    fake_node fake(*me, "exitpayloadfake", cookie, peer_has_exit_payload ? dd::dflag_exit_payload : 0);
    if (!fake.sock) return void(out.err = fake.err);
    herd::pid remote = herd::dist::intern(herd::dist::remote_pid{fake.id.name, 5, 0, fake.id.creation});
    // exit/2 to the remote process.
    herd::exit(remote, herd::exit_reason::shutdown("bye"));
    // A process linked to it ends.
    herd::spawn([remote] {
      herd::link(remote);
      herd::exit(herd::exit_reason::shutdown("linked"));
    });
    // The peer monitors a name nobody has here: noproc at once.
    fake.send_raw(dd::frame_monitor(fake.self(), dd::ctl_monitor_p, herd::pid{5, 0}, herd::no_pid,
                                    "exit_payload_nobody", 4242));
    for (int n = 0; n < 4; ++n) {
      std::optional<term> payload;
      auto c = fake.next_control(30s, &payload);
      if (!c) return void(out.err = fake.err);
      long op = c->is_tuple() && c->size() >= 1 ? (*c)[0].to_int64().value_or(-1) : -1;
      out.by_op[op] = seen_frame{std::move(*c), std::move(payload)};
    }
    herd::dist::stop();
  });
  return out;
}

term shutdown_term(const char* detail) { return term::tuple({term(atom("shutdown")), term::binary(detail)}); }

}  // namespace

TEST_CASE("to a peer with DFLAG_EXIT_PAYLOAD exits go as PAYLOAD_EXIT, PAYLOAD_EXIT2 and PAYLOAD_MONITOR_P_EXIT") {
  payload_seen s = run_case(true);
  INFO(s.err);
  REQUIRE(s.err.empty());
  CHECK(s.by_op.count(dd::ctl_link));
  REQUIRE(s.by_op.count(dd::ctl_payload_exit2));
  REQUIRE(s.by_op.count(dd::ctl_payload_exit));
  REQUIRE(s.by_op.count(dd::ctl_payload_monitor_p_exit));
  const seen_frame& e2 = s.by_op[dd::ctl_payload_exit2];
  CHECK(e2.control.size() == 3);
  REQUIRE(e2.payload);
  CHECK(*e2.payload == shutdown_term("bye"));
  const seen_frame& e = s.by_op[dd::ctl_payload_exit];
  CHECK(e.control.size() == 3);
  REQUIRE(e.payload);
  CHECK(*e.payload == shutdown_term("linked"));
  const seen_frame& m = s.by_op[dd::ctl_payload_monitor_p_exit];
  CHECK(m.control.size() == 4);
  CHECK(m.control[1] == term(atom("exit_payload_nobody")));
  REQUIRE(m.payload);
  CHECK(*m.payload == term(atom("noproc")));
}

TEST_CASE("to a peer without DFLAG_EXIT_PAYLOAD exits go as EXIT, EXIT2 and MONITOR_P_EXIT") {
  payload_seen s = run_case(false);
  INFO(s.err);
  REQUIRE(s.err.empty());
  CHECK(s.by_op.count(dd::ctl_link));
  REQUIRE(s.by_op.count(dd::ctl_exit2));
  REQUIRE(s.by_op.count(dd::ctl_exit));
  REQUIRE(s.by_op.count(dd::ctl_monitor_p_exit));
  const seen_frame& e2 = s.by_op[dd::ctl_exit2];
  CHECK(e2.control.size() == 4);
  CHECK(e2.control[3] == shutdown_term("bye"));
  CHECK_FALSE(e2.payload);
  const seen_frame& e = s.by_op[dd::ctl_exit];
  CHECK(e.control.size() == 4);
  CHECK(e.control[3] == shutdown_term("linked"));
  const seen_frame& m = s.by_op[dd::ctl_monitor_p_exit];
  CHECK(m.control.size() == 5);
  CHECK(m.control[4] == term(atom("noproc")));
}
