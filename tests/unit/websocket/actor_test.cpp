// The connection as a process: pushes by herd::send(pid, value) in the same
// receive as frames, the slow-consumer limit (1008, counted), the ping /
// timeout policy, hibernation when idle, and drain (1001).
#include "support/ws_client.hpp"
#include "support/ws_server.hpp"

#include <herd/actors/introspect.hpp>

#include <catch2/catch.hpp>

#include <sys/socket.h>

using namespace ws_test;
using herd::ws::opcode;
using namespace std::chrono_literals;

namespace {

template <class F>
void with_server(const herd::ws::options& o, F body) {
  herd::test::run_node(net_test::node_opts(2), [&] {
    uint16_t port = start_echo_server("ws_actor", o, herd::self());
    REQUIRE(port != 0);
    body(port);
    (void)herd::net::stop_listener("ws_actor");
  });
}

herd::pid opened_conn() {
  return herd::receive([](const echo_opened& m) { return m.conn; }, herd::after(10s, [] { return herd::pid{}; }));
}
std::optional<herd::ws::ending> ended() {
  return herd::receive([](const echo_ended& m) { return std::optional<herd::ws::ending>(m.how); },
                       herd::after(10s, [] { return std::optional<herd::ws::ending>(); }));
}

}  // namespace

TEST_CASE("ws another process pushes to a connection by its pid, between the client's own messages", "[ws][actor]") {
  std::vector<std::string> got;
  with_server({}, [&](uint16_t port) {
    ws_client c;
    if (!herd::blocking([&] { return c.upgraded(port); })) return;
    herd::pid conn = opened_conn();
    REQUIRE(conn.valid());
    herd::send(conn, std::string("push 1"));
    herd::blocking([&] {
      c.send(opcode::text, "echo");
      for (int i = 0; i < 2; ++i)
        if (auto f = c.read()) got.push_back(f->payload);
    });
    herd::send(conn, std::string("push 2"));
    herd::blocking([&] {
      if (auto f = c.read()) got.push_back(f->payload);
    });
  });
  CHECK(got == std::vector<std::string>{"push 1", "echo", "push 2"});
}

TEST_CASE("ws a client that stops reading is closed as a slow consumer with 1008 after what it had started, counted", "[ws][actor][slow]") {
  std::optional<herd::ws::ending> how;
  uint64_t before = herd::ws::counters().slow_consumers, after = 0;
  uint16_t code = 0;
  bool flagged = false;
  auto o = herd::ws::options{};
  o.max_queued_frames = 100;
  o.max_queued_bytes = 64 * 1024;
  o.close_timeout = 30s;  // the client drains its backlog before reading the close
  with_server(o, [&](uint16_t port) {
    ws_client c;  // does not read until the server gave up on it
    if (!herd::blocking([&] { return c.upgraded(port); })) return;
    herd::pid conn = opened_conn();
    REQUIRE(conn.valid());
    std::string big(16 * 1024, 'x');
    // The kernel's buffers take some megabytes first; the bound is generous.
    for (int i = 0; i < 20000 && herd::ws::counters().slow_consumers == before; ++i) {
      herd::send(conn, big);
      if (i % 64 == 0) herd::yield();
    }
    flagged = herd::test::eventually([&] { return herd::ws::counters().slow_consumers == before + 1; });
    herd::send(conn, std::string("after the limit"));  // dropped: the connection is closing
    herd::blocking([&] {
      while (auto f = c.read()) {
        if (f->op == opcode::text && f->payload != big) break;  // nothing else may come
        if (f->op == opcode::close) {
          code = f->close_code();
          break;
        }
      }
      std::string answer;
      herd::ws::write_close(answer, 1008, {}, 0x01020304);
      c.send_raw(answer);
    });
    how = ended();
    after = herd::ws::counters().slow_consumers;
  });
  CHECK(flagged);
  CHECK(code == 1008);
  REQUIRE(how);
  CHECK(how->slow_consumer);
  CHECK(how->sent == 1008);
  CHECK(after == before + 1);
}

TEST_CASE("ws handler closing is called once as the slow consumer is decided, long before the connection ends", "[ws][actor][slow]") {
  std::optional<echo_closing> closing;
  std::optional<herd::ws::ending> how;
  int more_closings = 0;
  auto o = herd::ws::options{};
  o.max_queued_frames = 100;
  o.max_queued_bytes = 64 * 1024;
  o.close_timeout = 30s;  // the connection lingers: closing must not wait for its end
  with_server(o, [&](uint16_t port) {
    ws_client c;  // reads nothing until closing was seen
    if (!herd::blocking([&] { return c.upgraded(port); })) return;
    herd::pid conn = opened_conn();
    REQUIRE(conn.valid());
    std::string big(16 * 1024, 'x');
    for (int i = 0; i < 20000 && !closing; ++i) {
      herd::send(conn, big);
      if (i % 64 == 0) {
        herd::yield();
        closing = herd::receive([](const echo_closing& m) { return std::optional<echo_closing>(m); },
                                herd::after(0ms, [] { return std::optional<echo_closing>(); }));
      }
    }
    if (!closing)
      closing = herd::receive([](const echo_closing& m) { return std::optional<echo_closing>(m); },
                              herd::after(10s, [] { return std::optional<echo_closing>(); }));
    // Only now does the client read its backlog and answer the close.
    herd::blocking([&] {
      while (auto f = c.read())
        if (f->op == opcode::close) break;
      std::string answer;
      herd::ws::write_close(answer, 1008, {}, 0x01020304);
      c.send_raw(answer);
    });
    how = ended();
    while (herd::receive([](const echo_closing&) { return true; }, herd::after(0ms, [] { return false; })))
      ++more_closings;
  });
  REQUIRE(closing);
  CHECK(closing->sent == 1008);
  REQUIRE(how);
  CHECK(how->slow_consumer);
  CHECK(more_closings == 0);
}

TEST_CASE("ws handler closing is called once when the peer closes, before terminate", "[ws][actor]") {
  std::vector<int> seen;  // 1: echo_closing, 2: echo_ended, in the order they came (one sender: sent order)
  with_server({}, [&](uint16_t port) {
    ws_client c;
    if (!herd::blocking([&] { return c.upgraded(port); })) return;
    REQUIRE(opened_conn().valid());
    herd::blocking([&] {
      c.send(opcode::close, std::string("\x03\xe8", 2));
      (void)c.expect_close();
    });
    while (seen.empty() || seen.back() != 2) {
      int m = herd::receive([](const echo_closing&) { return 1; }, [](const echo_ended&) { return 2; },
                            herd::after(10s, [] { return 0; }));
      if (m == 0) break;
      seen.push_back(m);
    }
  });
  CHECK(seen == std::vector<int>{1, 2});
}

TEST_CASE("ws pings every interval, and a client that answers nothing is closed with the timeout code", "[ws][actor][heartbeat]") {
  int pings = 0;
  uint16_t code = 0;
  auto o = herd::ws::options{};
  o.ping_interval = 50ms;
  o.timeout_code = 4000;
  with_server(o, [&](uint16_t port) {
    herd::blocking([&] {
      ws_client c;
      if (!c.upgraded(port)) return;
      while (auto f = c.read()) {  // reads, never answers
        if (f->op == opcode::ping) ++pings;
        if (f->op == opcode::close) {
          code = f->close_code();
          break;
        }
      }
    });
  });
  CHECK(pings >= 1);
  CHECK(code == 4000);
}

TEST_CASE("ws a client that keeps answering is never timed out", "[ws][actor][heartbeat]") {
  int echoes = 0;
  bool alive = false;
  auto o = herd::ws::options{};
  // Long enough that a client answering each ping at once is never two
  // intervals late, even on a loaded machine under a sanitizer.
  o.ping_interval = 250ms;
  o.timeout_code = 4000;
  with_server(o, [&](uint16_t port) {
    ws_client c;
    if (!herd::blocking([&] { return c.upgraded(port); })) return;
    herd::pid conn = opened_conn();
    // Four intervals of pings, each answered with a pong and a message: the
    // ping count is the clock, not a sleep.
    herd::blocking([&] {
      int pings = 0;
      while (pings < 4) {
        auto f = c.read();
        if (!f || f->op == opcode::close) return;
        if (f->op == opcode::ping) {
          ++pings;
          c.send(opcode::pong, f->payload);
          c.send(opcode::text, "alive");
        }
        if (f->op == opcode::text) ++echoes;
      }
    });
    alive = herd::introspect::process_info(conn).has_value();
  });
  CHECK(alive);
  CHECK(echoes >= 3);
}

TEST_CASE("ws an idle connection hibernates and still echoes and takes pushes after", "[ws][actor][hibernate]") {
  bool hibernated = false;
  std::vector<std::string> got;
  auto o = herd::ws::options{};
  o.idle_hibernate = 10ms;
  with_server(o, [&](uint16_t port) {
    ws_client c;
    if (!herd::blocking([&] { return c.upgraded(port); })) return;
    herd::pid conn = opened_conn();
    hibernated = herd::test::eventually_hibernated(conn);
    herd::blocking([&] {
      c.send(opcode::text, "after");
      if (auto f = c.read()) got.push_back(f->payload);
    });
    herd::test::eventually_hibernated(conn);
    herd::send(conn, std::string("pushed"));
    herd::blocking([&] {
      if (auto f = c.read()) got.push_back(f->payload);
    });
  });
  CHECK(hibernated);
  CHECK(got == std::vector<std::string>{"after", "pushed"});
}

TEST_CASE("ws a draining listener closes its WebSockets with 1001", "[ws][actor][drain]") {
  uint16_t code = 0;
  bool eof = false;
  herd::test::run_node(net_test::node_opts(2), [&] {
    uint16_t port = start_echo_server("ws_drain", {}, herd::self());
    REQUIRE(port != 0);
    ws_client c;
    if (!herd::blocking([&] { return c.upgraded(port); })) return;
    REQUIRE(opened_conn().valid());
    // The client answers the close on the blocking pool while the drain waits.
    auto reader = herd::spawn([&] {
      herd::blocking([&] {
        code = c.expect_close();
        eof = c.eof();
      });
    });
    (void)herd::net::drain_listener("ws_drain", 10s);
    herd::test::eventually_gone(reader, 15s);
  });
  CHECK(code == 1001);
  CHECK(eof);
}

TEST_CASE("ws a stalled writer waits for room with no timer - it hibernates with its queue - and a client that drains later gets every frame in order",
          "[ws][actor][slow]") {
  bool stalled_asleep = false;
  std::size_t pushed = 0;
  std::vector<std::string> bad;
  auto o = herd::ws::options{};
  o.idle_hibernate = 10ms;
  o.max_queued_frames = 100000;
  o.max_queued_bytes = std::size_t(256) << 20;
  auto frame = [](std::size_t i) {
    std::string s = "seq " + std::to_string(i) + " ";
    s.resize(16 * 1024, 'x');
    return s;
  };
  with_server(o, [&](uint16_t port) {
    ws_client c;
    bool up = herd::blocking([&] {
      // A small receive buffer, so that a few MiB fill the path (not below
      // loopback's 64 KiB segment: TCP would crawl on its persist timer).
      if (!c.sock.connect(port)) return false;
      int small = 128 * 1024;
      ::setsockopt(c.sock.fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
      c.send_raw("GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
      std::string head;
      while (head.find("\r\n\r\n") == std::string::npos) {
        std::string b = c.sock.recv_n(1, 10000);
        if (b.empty()) return false;
        head += b;
      }
      return head.starts_with("HTTP/1.1 101");
    });
    REQUIRE(up);
    herd::pid conn = opened_conn();
    REQUIRE(conn.valid());
    // Pushes until the socket refuses some (the queue shows frames); the
    // client reads nothing meanwhile. Bounded: 64 MiB.
    auto queued = [&] {
      auto i = herd::introspect::process_info(conn);
      return i ? i->row.out_frames : 0;
    };
    while (pushed < 4096) {
      for (int k = 0; k < 16; ++k) herd::send(conn, frame(pushed++));
      if (herd::test::eventually([&] { return queued() > 0; }, 50ms)) break;
    }
    // Nothing is written until the client reads, and no timer is needed to
    // notice when it does: the connection sleeps with its stack released.
    stalled_asleep = herd::test::eventually([&] {
      auto i = herd::introspect::process_info(conn);
      return i && i->row.hibernated && i->row.out_frames > 0;
    });
    herd::send(conn, std::string("last"));
    herd::blocking([&] {
      for (std::size_t i = 0; i <= pushed; ++i) {
        auto f = c.read();
        std::string want = i == pushed ? std::string("last") : frame(i);
        if (!f || f->payload != want) {
          bad.push_back("frame " + std::to_string(i) + ": " + (f ? f->payload.substr(0, 16) : std::string("none")));
          return;
        }
      }
    });
  });
  INFO("pushed " << pushed);
  CHECK(pushed < 4096);
  CHECK(stalled_asleep);
  CHECK(bad.empty());
}
