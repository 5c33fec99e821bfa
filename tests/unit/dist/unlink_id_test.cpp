// The link protocol a peer negotiates (DFLAG_UNLINK_ID, OTP 23+; OTP 26
// requires it): to a peer that announces the flag, an unlink goes as
// UNLINK_ID {35, Id, From, To} with a fresh id and the peer's ACK keeps the
// connection; to one without it, plain UNLINK {4, From, To}; an UNLINK_ID
// from the peer is acknowledged with its id. The peer is a fake node in
// this process (fake_node.hpp), so every frame is read as written.
#include <herd/actors.hpp>
#include <herd/dist/node.hpp>

#include <catch2/catch.hpp>

#include "fake_node.hpp"
#include "peers.hpp"
#include "support/node_fixture.hpp"

using namespace std::chrono_literals;
using herd::atom;
using herd::term;
namespace dd = herd::dist::detail;
using herd_test_dist::fake_node;

namespace {

const std::string cookie = "herd_unlink_id_cookie";

struct unlink_seen {
  std::string err;
  long link_op = -1, unlink_op = -1;
  std::size_t unlink_size = 0;
  bool id_is_integer = false, acked_connection_alive = false;
  bool peer_unlink_acked = false;
};

bool op_is(const term& t, long op) {
  return t.is_tuple() && t.size() >= 1 && t[0].to_int64().value_or(-1) == op;
}

unlink_seen run_case(bool peer_has_unlink_id) {
  unlink_seen out;
  herd::test::run_node(herd::test::opts(1), [&] {
    auto me = herd::dist::start(herd::test::test_node_options("unlinkid", cookie));
    if (!me) return void(out.err = me.error().message());
    fake_node fake(*me, "unlinkfake", cookie, peer_has_unlink_id ? dd::dflag_unlink_id : 0);
    if (!fake.sock) return void(out.err = fake.err);
    herd::pid remote = herd::dist::intern(herd::dist::remote_pid{fake.id.name, 5, 0, fake.id.creation});
    herd::pid me_pid = herd::self();
    herd::register_name("unlink_id_probe", me_pid);
    herd::link(remote);
    herd::unlink(remote);
    auto link = fake.next_control(30s);
    auto unlink = link ? fake.next_control(30s) : std::nullopt;
    if (!link || !unlink) return void(out.err = fake.err);
    out.link_op = link->is_tuple() ? (*link)[0].to_int64().value_or(-1) : -1;
    out.unlink_op = unlink->is_tuple() ? (*unlink)[0].to_int64().value_or(-1) : -1;
    out.unlink_size = unlink->is_tuple() ? unlink->size() : 0;
    if (op_is(*unlink, dd::ctl_unlink_id) && unlink->size() == 4) {
      out.id_is_integer = (*unlink)[1].to_int64().has_value();
      // The ACK {36, Id, To, From}: the connection takes it and goes on, so
      // a message sent after it still arrives.
      term ack = term::tuple({term(long(dd::ctl_unlink_id_ack)), (*unlink)[1], (*unlink)[3], (*unlink)[2]});
      std::string body = "p";
      body += herd::term_to_binary(ack);
      std::string frame;
      dd::put32(frame, uint32_t(body.size()));
      fake.send_raw(frame + body);
    }
    // The peer unlinks too: {35, 77, FakePid, Me} is answered {36, 77, Me, FakePid}.
    if (peer_has_unlink_id) {
      term from = (*unlink)[3], to = (*unlink)[2];  // the fake pid, then ours
      std::string body = "p";
      body += herd::term_to_binary(term::tuple({term(long(dd::ctl_unlink_id)), term(77L), from, to}));
      std::string frame;
      dd::put32(frame, uint32_t(body.size()));
      fake.send_raw(frame + body);
      auto ack = fake.next_control(30s);
      out.peer_unlink_acked = ack && op_is(*ack, dd::ctl_unlink_id_ack) && ack->size() == 4 &&
                              (*ack)[1].to_int64().value_or(0) == 77 && (*ack)[2] == to && (*ack)[3] == from;
    }
    fake.reg_send(9, "unlink_id_probe", term(atom("still_up")));
    out.acked_connection_alive = herd::receive(
        herd::when([](const herd::dist::etf_message& m) { return m.term() && m.term()->is_atom(); },
                   [](herd::dist::etf_message&&) { return true; }),
        herd::after(30s, [] { return false; }));
    herd::dist::stop();
  });
  return out;
}

}  // namespace

TEST_CASE("an unlink to a peer with DFLAG_UNLINK_ID goes as UNLINK_ID and its ACK is taken, and the peer's UNLINK_ID is acknowledged") {
  unlink_seen s = run_case(true);
  INFO(s.err);
  CHECK(s.link_op == dd::ctl_link);
  CHECK(s.unlink_op == dd::ctl_unlink_id);
  CHECK(s.unlink_size == 4);
  CHECK(s.id_is_integer);
  CHECK(s.peer_unlink_acked);
  CHECK(s.acked_connection_alive);
}

TEST_CASE("an unlink to a peer without DFLAG_UNLINK_ID goes as plain UNLINK") {
  unlink_seen s = run_case(false);
  INFO(s.err);
  CHECK(s.link_op == dd::ctl_link);
  CHECK(s.unlink_op == dd::ctl_unlink);
  CHECK(s.unlink_size == 3);
  CHECK(s.acked_connection_alive);
}
