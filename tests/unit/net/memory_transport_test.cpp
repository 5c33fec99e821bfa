// memory_transport, case by case against tcp_socket's meanings: active
// modes, passive recv, back-pressure, close / half-close / abort, a writer
// killed mid-send, ownership, and many pairs. With both ends in one process
// every send is delivered before it returns, so most cases need no waiting.
#include "net_fixture.hpp"

#include <herd/net/memory_transport.hpp>

using namespace net_test;
using herd::net::active;
using herd::net::errc;
using herd::net::memory_transport;
using herd::net::tcp_closed;
using herd::net::tcp_data;
using herd::net::tcp_error;
using herd::net::tcp_passive;

namespace memory_transport_test_msgs {
struct handle {
  memory_transport t;
};
}  // namespace memory_transport_test_msgs
using namespace memory_transport_test_msgs;

namespace {

// What arrived in the mailbox without waiting: "d:<bytes>", "closed", "error:<code>", "passive".
std::vector<std::string> drain_now() {
  std::vector<std::string> got;
  for (bool more = true; more;) {
    more = herd::receive([&](tcp_data& d) { got.push_back("d:" + d.data.to_string()); return true; },
                         [&](const tcp_closed&) { got.push_back("closed"); return true; },
                         [&](const tcp_error& e) { got.push_back(std::string("error:") + to_string(e.err.code)); return true; },
                         [&](const tcp_passive&) { got.push_back("passive"); return true; },
                         herd::after(0ms, [] { return false; }));
  }
  return got;
}

std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
  return s;
}

}  // namespace

TEST_CASE("memory pair: distinct ids, both ends owned by the caller, passive", "[net][memory]") {
  bool distinct = false, owned = false, nothing = false;
  std::string local, peer;
  herd::test::run_node(node_opts(), [&] {
    auto p = herd::net::memory_pair();
    REQUIRE(p);
    auto q = herd::net::memory_pair();
    REQUIRE(q);
    distinct = p->first.id() != p->second.id() && p->first.id() != q->first.id() && p->first.id().v != 0;
    owned = p->first.owner() == herd::self() && p->second.owner() == herd::self();
    REQUIRE(p->first.send("x"));
    nothing = drain_now().empty();  // passive: no message
    local = p->first.local();
    peer = p->second.peer();
  });
  CHECK(distinct);
  CHECK(owned);
  CHECK(nothing);
  CHECK(local == peer);
}

TEST_CASE("memory active once: one message per arm, the rest waits in the buffer", "[net][memory]") {
  std::vector<std::string> first, second;
  std::string queued;
  herd::test::run_node(node_opts(), [&] {
    auto p = herd::net::memory_pair();
    REQUIRE(p);
    auto& [a, b] = *p;
    REQUIRE(b.set_active(active::once()));
    REQUIRE(a.send("one"));
    REQUIRE(a.send("two"));
    first = drain_now();
    auto r = b.recv(0, 0ms);  // passive again: "two" waited
    queued = r ? r->to_string() : "none";
    REQUIRE(a.send("three"));
    REQUIRE(b.set_active(active::once()));  // arming with bytes waiting delivers them
    second = drain_now();
  });
  CHECK(first == std::vector<std::string>{"d:one"});
  CHECK(queued == "two");
  CHECK(second == std::vector<std::string>{"d:three"});
}

TEST_CASE("memory active n: n messages, then tcp_passive, and n adds to a running count", "[net][memory]") {
  std::vector<std::string> got, zero;
  std::string left;
  errc too_many{};
  herd::test::run_node(node_opts(), [&] {
    auto p = herd::net::memory_pair();
    REQUIRE(p);
    auto& [a, b] = *p;
    REQUIRE(b.set_active(active::n(1)));
    REQUIRE(b.set_active(active::n(1)));  // 2 in all
    too_many = b.set_active(active::n(32767)).code();
    for (const char* s : {"1", "2", "3"}) REQUIRE(a.send(s));
    got = drain_now();
    auto r = b.recv(0, 0ms);
    left = r ? r->to_string() : "none";
    REQUIRE(b.set_active(active::n(0)));  // a total <= 0: passive and tcp_passive
    zero = drain_now();
  });
  CHECK(too_many == errc::bad_options);
  CHECK(got == std::vector<std::string>{"d:1", "d:2", "passive"});
  CHECK(left == "3");
  CHECK(zero == std::vector<std::string>{"passive"});
}

TEST_CASE("memory active always: every send is a message, tcp_closed after all data", "[net][memory]") {
  std::vector<std::string> got;
  errc after_close{};
  herd::test::run_node(node_opts(), [&] {
    auto p = herd::net::memory_pair();
    REQUIRE(p);
    auto& [a, b] = *p;
    REQUIRE(b.set_active(active::always()));
    for (const char* s : {"x", "y", "z"}) REQUIRE(a.send(s));
    a.close();
    got = drain_now();
    after_close = b.send("to nobody").code();
  });
  CHECK(got == std::vector<std::string>{"d:x", "d:y", "d:z", "closed"});
  CHECK(after_close == errc::reset);
}

TEST_CASE("memory passive recv: at most max, a timeout, data from another process wakes it", "[net][memory]") {
  std::string first, second, woken;
  errc timed_out{}, in_active{};
  herd::test::run_node(node_opts(), [&] {
    auto c = herd::net::memory_connect([](memory_transport s) {
      // Waits for the go, so the client is parked in recv when bytes come.
      herd::receive([](const std::string&) {});
      (void)s.send("late");
      herd::receive([](const std::string&) {});
    });
    REQUIRE(c);
    auto& t = c->client;
    timed_out = t.recv(0, 20ms).code();
    herd::pid me = herd::self();
    herd::pid go = herd::spawn([me, server = c->server] {
      herd::test::eventually([&] { return herd::test::parked(me); });
      herd::send(server, std::string("go"));
    });
    (void)go;
    auto r = t.recv(0, 30s);
    woken = r ? r->to_string() : r.error().message();
    herd::send(c->server, std::string("end"));
    auto p = herd::net::memory_pair();
    REQUIRE(p);
    REQUIRE(p->first.send("abcdef"));
    auto r1 = p->second.recv(4, 0ms);
    first = r1 ? r1->to_string() : "none";
    auto r2 = p->second.recv(0, 0ms);
    second = r2 ? r2->to_string() : "none";
    REQUIRE(p->second.set_active(active::once()));
    in_active = p->second.recv(0, 0ms).code();
    REQUIRE(herd::test::eventually_gone(c->server));
  });
  CHECK(timed_out == errc::timeout);
  CHECK(woken == "late");
  CHECK(first == "abcd");
  CHECK(second == "ef");
  CHECK(in_active == errc::bad_options);
}

TEST_CASE("memory back-pressure: a full buffer parks the writer, a slow reader gets every byte in order",
          "[net][memory]") {
  const std::size_t total = herd::test::scaled(2 << 20, 256 << 10);
  std::string got;
  bool writer_parked = false;
  errc end{};
  herd::test::run_node(node_opts(), [&] {
    herd::net::memory_options o;
    o.buffer_bytes = 4096;
    auto c = herd::net::memory_connect([total](memory_transport s) { (void)s.send(pattern(total)); }, o);
    REQUIRE(c);
    // The writer fills the buffer and waits in its process.
    writer_parked = herd::test::eventually([&] { return herd::test::parked(c->server); });
    auto& t = c->client;
    for (std::size_t i = 0;; ++i) {
      auto r = (i % 2) ? t.recv(1000, 30s) : t.recv(0, 30s);
      if (!r) {
        end = r.code();
        break;
      }
      got += r->view();
    }
    REQUIRE(herd::test::eventually_gone(c->server));
  });
  CHECK(writer_parked);
  CHECK(got.size() == total);
  CHECK(got == pattern(total));
  CHECK(end == errc::closed);
}

TEST_CASE("memory half-close: the peer reads EOF and may still write back", "[net][memory]") {
  std::vector<std::string> b_got;
  std::string a_got;
  errc a_send_after{}, b_recv_after{};
  herd::test::run_node(node_opts(), [&] {
    auto p = herd::net::memory_pair();
    REQUIRE(p);
    auto& [a, b] = *p;
    REQUIRE(b.set_active(active::always()));
    REQUIRE(a.send("request"));
    REQUIRE(a.shutdown_write());
    a_send_after = a.send("more").code();
    b_got = drain_now();
    REQUIRE(b.set_active(active::passive()));
    b_recv_after = b.recv(0, 0ms).code();
    REQUIRE(b.send("reply"));
    auto r = a.recv(0, 0ms);
    a_got = r ? r->to_string() : "none";
  });
  CHECK(b_got == std::vector<std::string>{"d:request", "closed"});
  CHECK(a_send_after == errc::closed);
  CHECK(b_recv_after == errc::closed);
  CHECK(a_got == "reply");
}

TEST_CASE("memory abort: the peer gets tcp_error reset then tcp_closed, unread bytes dropped", "[net][memory]") {
  std::vector<std::string> active_side;
  errc first{}, then{};
  herd::test::run_node(node_opts(), [&] {
    auto p = herd::net::memory_pair();
    REQUIRE(p);
    REQUIRE(p->first.send("unread"));
    p->first.abort();
    REQUIRE(p->second.set_active(active::once()));
    active_side = drain_now();
    auto q = herd::net::memory_pair();
    REQUIRE(q);
    q->first.abort();
    first = q->second.recv(0, 0ms).code();
    then = q->second.recv(0, 0ms).code();
  });
  CHECK(active_side == std::vector<std::string>{"error:reset", "closed"});
  CHECK(first == errc::reset);
  CHECK(then == errc::closed);
}

TEST_CASE("memory: a writer killed while waiting for room closes its end, the reader gets a prefix then EOF",
          "[net][memory]") {
  std::string got;
  bool parked = false, closed_seen = false;
  herd::test::run_node(node_opts(), [&] {
    herd::net::memory_options o;
    o.buffer_bytes = 1000;
    auto c = herd::net::memory_connect(
        [](memory_transport s) {
          for (;;)
            if (!s.send(pattern(10000))) return;
        },
        o);
    REQUIRE(c);
    parked = herd::test::eventually([&] { return herd::test::parked(c->server); });
    herd::exit(c->server, herd::exit_reason::kill());
    REQUIRE(herd::test::eventually_gone(c->server));
    REQUIRE(c->client.set_active(active::always()));
    herd::receive([&](tcp_data& d) { got += d.data.view(); });  // the one buffer's worth
    herd::receive([&](const tcp_closed&) { closed_seen = true; }, herd::after(30s, [] {}));
  });
  CHECK(parked);
  CHECK(got == pattern(10000).substr(0, 1000));
  CHECK(closed_seen);
}

TEST_CASE("memory controlling_process: messages go to the new owner, the old one is refused", "[net][memory]") {
  errc old_send{}, stranger{};
  std::string new_owner_got;
  herd::test::run_node(node_opts(), [&] {
    auto p = herd::net::memory_pair();
    REQUIRE(p);
    herd::pid me = herd::self();
    herd::pid next = herd::spawn([me] {
      herd::receive([me](handle& h) {
        memory_transport t = std::move(h.t);
        (void)t.set_active(active::once());
        herd::send(me, std::string("armed"));
        herd::receive([&](tcp_data& d) { herd::send(me, d.data.to_string() + (d.sock == t.id() ? "" : "?")); },
                      herd::after(30s, [&] { herd::send(me, std::string("none")); }));
      });
    });
    REQUIRE(p->second.controlling_process(next));
    old_send = p->second.send("x").code();
    herd::send(next, handle{std::move(p->second)});
    REQUIRE(herd::receive([](const std::string& s) { return s; }) == "armed");
    REQUIRE(p->first.send("for the new owner"));
    new_owner_got = herd::receive([](const std::string& s) { return s; });
    auto q = herd::net::memory_pair();
    REQUIRE(q);
    herd::spawn([me, t = &q->first] { herd::send(me, t->send("x").code()); });
    stranger = herd::receive([](errc c) { return c; });
  });
  CHECK(old_send == errc::not_owner);
  CHECK(new_owner_got == "for the new owner");
  CHECK(stranger == errc::not_owner);
}

TEST_CASE("memory: many pairs, each served by a hibernating process, echo and close", "[net][memory]") {
  const std::size_t n = herd::test::scaled(10000, 1000);
  std::size_t echoed = 0, closed = 0;
  herd::test::run_node(node_opts(), [&] {
    std::vector<memory_transport> clients;
    clients.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      auto c = herd::net::memory_connect([](memory_transport s) {
        (void)s.set_active(active::once());
        herd::hibernate([s = std::move(s)]() mutable {
          herd::receive([&](tcp_data& d) { (void)s.send(d.data.view()); },
                        [](const tcp_closed&) {});
        });
      });
      REQUIRE(c);
      REQUIRE(c->client.set_active(active::once()));
      clients.push_back(std::move(c->client));
    }
    for (std::size_t i = 0; i < n; ++i) REQUIRE(clients[i].send(std::to_string(i)));
    for (std::size_t i = 0; i < n; ++i) {
      bool ok = herd::receive([&](tcp_data& d) { return d.data.view().size() > 0; }, herd::after(30s, [] { return false; }));
      echoed += ok;
    }
    for (auto& c : clients) c.close();
    closed = n;
    REQUIRE(herd::test::wait_live(1, 60s));
  });
  CHECK(echoed == n);
  CHECK(closed == n);
}

TEST_CASE("memory: a reader that closes wakes a writer waiting for room with errc::reset", "[net][memory]") {
  errc writer_got{};
  bool parked = false;
  herd::test::run_node(node_opts(), [&] {
    herd::net::memory_options o;
    o.buffer_bytes = 100;
    herd::pid me = herd::self();
    auto c = herd::net::memory_connect([me](memory_transport s) { herd::send(me, s.send(pattern(1000)).code()); }, o);
    REQUIRE(c);
    parked = herd::test::eventually([&] { return herd::test::parked(c->server); });
    c->client.close();
    writer_got = herd::receive([](errc e) { return e; }, herd::after(30s, [] { return errc::system; }));
  });
  CHECK(parked);
  CHECK(writer_got == errc::reset);
}

TEST_CASE("memory: a close from a plain thread wakes the peer parked in recv", "[net][memory]") {
  errc got{};
  herd::test::run_node(node_opts(), [&] {
    auto p = herd::net::memory_pair();
    REQUIRE(p);
    memory_transport far = std::move(p->first);
    herd::pid me = herd::self();
    std::thread t([&] {
      herd::test::eventually_on_thread([me] { return herd::test::parked(me); }, 60s);
      far.close();
    });
    got = p->second.recv(0, 60s).code();
    herd::blocking([&] { t.join(); });
  });
  CHECK(got == errc::closed);
}

TEST_CASE("memory: try_send takes what fits, sndbuf sets the buffer, bad sizes are refused", "[net][memory]") {
  std::size_t took = 0, then = 0, after_grow = 0;
  errc bad_pair{}, bad_sndbuf{};
  herd::test::run_node(node_opts(), [&] {
    herd::net::memory_options o;
    o.buffer_bytes = 10;
    auto p = herd::net::memory_pair(o);
    REQUIRE(p);
    took = p->first.try_send("0123456789abc").value();
    then = p->first.try_send("x").value();
    herd::net::socket_options so;
    so.sndbuf = 20;
    REQUIRE(p->first.set_options(so));
    after_grow = p->first.try_send("0123456789abc").value();
    so.sndbuf = -1;
    bad_sndbuf = p->first.set_options(so).code();
    o.buffer_bytes = 0;
    bad_pair = herd::net::memory_pair(o).code();
  });
  CHECK(took == 10);
  CHECK(then == 0);
  CHECK(after_grow == 10);
  CHECK(bad_sndbuf == errc::bad_options);
  CHECK(bad_pair == errc::bad_options);
}
