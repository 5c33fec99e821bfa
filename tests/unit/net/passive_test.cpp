// Passive mode: recv parks, times out, returns at most `max`, and reports the
// peer's close and reset as return values.
#include "net_fixture.hpp"

using namespace net_test;
using herd::net::errc;

TEST_CASE("passive recv waits for bytes, returns at most max, and times out when nothing comes", "[net][passive]") {
  std::string first, second, third;
  errc timeout_code{};
  double waited_ms = 0;
  herd::test::run_node(node_opts(), [&] {
    auto p = connected_pair();
    REQUIRE(p.mine.valid());
    auto t0 = herd::test::clk::now();
    auto r = p.mine.recv(0, 120ms);
    waited_ms = herd::test::ms_since(t0);
    REQUIRE_FALSE(r);
    timeout_code = r.code();
    // A peer thread sends while the process is parked in recv.
    std::thread peer([&, me = herd::self()] {
      herd::test::eventually_on_thread([me] { return herd::test::parked(me); }, 60s);
      p.peer.send_all("hello");
    });
    auto a = p.mine.recv(2, 5s);
    first = a ? a->to_string() : "failed";
    auto b = p.mine.recv(0, 5s);
    second = b ? b->to_string() : "failed";
    peer.join();
    p.peer.send_all("more");
    auto c = p.mine.recv(0, 5s);
    third = c ? c->to_string() : "failed";
  });
  CHECK(timeout_code == errc::timeout);
  CHECK(waited_ms >= 100);
  CHECK(first == "he");
  CHECK(second == "llo");
  CHECK(third == "more");
}

TEST_CASE("recv after the peer closes returns the data, then errc::closed", "[net][passive]") {
  std::string got;
  errc end{};
  herd::test::run_node(node_opts(), [&] {
    auto p = connected_pair();
    REQUIRE(p.mine.valid());
    p.peer.send_all("last words");
    p.peer.close();
    for (;;) {
      auto r = p.mine.recv(0, 5s);
      if (!r) {
        end = r.code();
        break;
      }
      got += r->view();
    }
  });
  CHECK(got == "last words");
  CHECK(end == errc::closed);
}

TEST_CASE("recv after a reset returns errc::reset", "[net][passive]") {
  errc code{};
  herd::test::run_node(node_opts(), [&] {
    auto p = connected_pair();
    REQUIRE(p.mine.valid());
    p.peer.reset();
    auto r = p.mine.recv(0, 5s);
    REQUIRE_FALSE(r);
    code = r.code();
  });
  CHECK(code == errc::reset);
}

TEST_CASE("recv on a socket in an active mode is refused", "[net][passive]") {
  errc code{};
  herd::test::run_node(node_opts(), [&] {
    auto p = connected_pair();
    REQUIRE(p.mine.valid());
    REQUIRE(p.mine.set_active(herd::net::active::once()));
    auto r = p.mine.recv(0, 10ms);
    REQUIRE_FALSE(r);
    code = r.code();
  });
  CHECK(code == errc::bad_options);
}

TEST_CASE("connect to a port nobody listens on is refused, a bad host is a bad address", "[net][passive]") {
  errc refused{}, bad{};
  herd::test::run_node(node_opts(), [&] {
    uint16_t port;
    {
      raw_listener l;  // a port that was free a moment ago
      port = l.port;
    }
    auto r = herd::net::tcp_socket::connect("127.0.0.1", port, 2s);
    REQUIRE_FALSE(r);
    refused = r.code();
    auto b = herd::net::tcp_socket::connect("no.such.host.invalid", 80, 2s);
    REQUIRE_FALSE(b);
    bad = b.code();
  });
  CHECK(refused == errc::refused);
  CHECK(bad == errc::bad_address);
}

TEST_CASE("a process that dies closes its sockets", "[net][passive]") {
  bool peer_saw_eof = false;
  herd::test::run_node(node_opts(), [&] {
    raw_listener l;
    herd::pid me = herd::self();
    auto [child, ref] = herd::spawn_monitor([port = l.port, me] {
      auto s = herd::net::tcp_socket::connect("127.0.0.1", port, 5s);
      herd::send(me, s.ok());
      (void)s->recv();  // parked here when the exit signal comes
    });
    REQUIRE(herd::receive([](bool ok) { return ok; }, herd::after(5s, [] { return false; })));
    raw_client peer;
    peer.fd = l.accept();
    herd::exit(child, herd::exit_reason::shutdown());
    herd::receive([](const herd::down&) {}, herd::after(5s));
    peer_saw_eof = peer.wait_eof(5000);
  });
  CHECK(peer_saw_eof);
}
