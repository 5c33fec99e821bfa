// Ownership: controlling_process moves the active-mode messages; everyone
// else is refused.
#include "net_fixture.hpp"

using namespace net_test;
using herd::net::active;
using herd::net::errc;
using herd::net::tcp_data;
using herd::net::tcp_socket;

namespace ownership_test_msgs {
struct handle {
  tcp_socket sock;
};
struct got {
  std::string bytes;
  bool same_socket;
};
}  // namespace ownership_test_msgs
using namespace ownership_test_msgs;

TEST_CASE("controlling_process hands the messages to another process and refuses a non-owner", "[net][owner]") {
  errc old_owner_send{}, old_owner_active{}, stranger{};
  std::string new_owner_got;
  bool same = false;
  herd::test::run_node(node_opts(), [&] {
    auto p = connected_pair();
    REQUIRE(p.mine.valid());
    herd::pid me = herd::self();
    herd::pid next = herd::spawn([me] {
      herd::receive([me](handle& h) {
        tcp_socket s = std::move(h.sock);
        (void)s.set_active(active::once());
        herd::send(me, std::string("armed"));
        herd::receive([&](tcp_data& d) { herd::send(me, got{d.data.to_string(), d.sock == s.id()}); },
                      herd::after(5s, [&] { herd::send(me, got{"none", false}); }));
      });
    });
    REQUIRE(p.mine.controlling_process(next));
    // The old holder is no longer the owner.
    old_owner_send = p.mine.send("x").code();
    old_owner_active = p.mine.set_active(active::once()).code();
    herd::send(next, handle{std::move(p.mine)});
    REQUIRE(herd::receive([](const std::string& s) { return s; }, herd::after(5s, [] { return std::string(); })) ==
            "armed");
    p.peer.send_all("for the new owner");
    auto g = herd::receive([](got& x) { return x; }, herd::after(5s, [] { return got{"timeout", false}; }));
    new_owner_got = g.bytes;
    same = g.same_socket;
    // A process that was never the owner.
    auto q = connected_pair();
    herd::pid asker = herd::spawn([me, s = &q.mine] { herd::send(me, s->recv(0, 10ms).code()); });
    (void)asker;
    stranger = herd::receive([](errc c) { return c; }, herd::after(5s, [] { return errc::system; }));
  });
  CHECK(old_owner_send == errc::not_owner);
  CHECK(old_owner_active == errc::not_owner);
  CHECK(new_owner_got == "for the new owner");
  CHECK(same);
  CHECK(stranger == errc::not_owner);
}

TEST_CASE("readiness that was pending when ownership moved reaches the new owner", "[net][owner]") {
  std::string got;
  herd::test::run_node(node_opts(), [&] {
    auto p = connected_pair();
    REQUIRE(p.mine.valid());
    herd::pid me = herd::self();
    herd::pid next = herd::spawn([me] {
      herd::receive([me](handle& h) {
        tcp_socket s = std::move(h.sock);
        herd::receive([&](tcp_data& d) { herd::send(me, d.data.to_string()); },
                      herd::after(5s, [&] { herd::send(me, std::string("none")); }));
      });
    });
    // Armed while the bytes are already there: the notification is posted to
    // us; we hand the socket over before our mailbox is drained.
    p.peer.send_all("pending");
    // The bytes are in our socket's queue (poll, not a herd wait: no drain of our mailbox).
    pollfd pfd{p.mine.fd(), POLLIN, 0};
    REQUIRE(::poll(&pfd, 1, 60000) == 1);
    REQUIRE(p.mine.set_active(active::once()));
    REQUIRE(p.mine.controlling_process(next));
    herd::send(next, handle{std::move(p.mine)});
    got = herd::receive([](const std::string& s) { return s; }, herd::after(5s, [] { return std::string("timeout"); }));
  });
  CHECK(got == "pending");
}
