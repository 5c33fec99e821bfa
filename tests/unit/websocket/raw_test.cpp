// The connection loop against a raw client, one RFC 6455 rule per test
// (grouped as the Autobahn suite's sections): what goes on the wire, the
// close code, and that the server closes TCP after the close handshake.
// Client I/O runs on the blocking pool (herd::blocking); 127.0.0.1 only.
#include "support/ws_client.hpp"
#include "support/ws_server.hpp"

#include <catch2/catch.hpp>

using namespace ws_test;
using herd::ws::opcode;
using namespace std::chrono_literals;

namespace {

herd::ws::options test_options() {
  herd::ws::options o;
  o.parser.max_message = 1 << 17;
  return o;
}

// Runs `body(port)` as a node's root with an echo server listening.
template <class F>
void with_server(const herd::ws::options& o, F body) {
  herd::test::run_node(net_test::node_opts(2), [&] {
    uint16_t port = start_echo_server("ws_raw", o, herd::self());
    REQUIRE(port != 0);
    body(port);
    (void)herd::net::stop_listener("ws_raw");
  });
}

// Sends `frames` (already built) and returns the close code the server sent
// and whether it closed TCP afterwards.
std::pair<uint16_t, bool> close_after(uint16_t port, const std::function<void(ws_client&)>& send) {
  return herd::blocking([&] {
    ws_client c;
    if (!c.upgraded(port)) return std::pair<uint16_t, bool>{0, false};
    send(c);
    uint16_t code = c.expect_close();
    return std::pair<uint16_t, bool>{code, c.eof()};
  });
}

}  // namespace

TEST_CASE("ws framing: text and binary of 0 to 65536 bytes are echoed whole", "[ws][raw][framing]") {
  std::vector<std::string> bad;
  with_server(test_options(), [&](uint16_t port) {
    herd::blocking([&] {
      ws_client c;
      if (!c.upgraded(port)) return bad.push_back("no 101");
      for (std::size_t n : {0, 1, 125, 126, 127, 65535, 65536}) {
        for (auto op : {opcode::text, opcode::binary}) {
          std::string p(n, 'a' + char(n % 26));
          c.send(op, p);
          auto f = c.read();
          if (!f || f->op != op || f->payload != p || !f->fin) bad.push_back("echo of " + std::to_string(n));
        }
      }
      c.send(opcode::close, std::string("\x03\xe8", 2));
      auto f = c.read();
      if (!f || f->op != opcode::close || f->close_code() != 1000) bad.push_back("close echo");
      if (!c.eof()) bad.push_back("no EOF after the close handshake");
    });
  });
  CHECK(bad.empty());
  for (auto& b : bad) INFO(b);
}

TEST_CASE("ws reserved bits and reserved opcodes close with 1002", "[ws][raw][reserved]") {
  std::vector<std::pair<uint16_t, bool>> got;
  with_server(test_options(), [&](uint16_t port) {
    got.push_back(close_after(port, [](ws_client& c) { c.send(opcode::text, "x", true, 4); }));
    got.push_back(close_after(port, [](ws_client& c) { c.send(opcode(3), "x"); }));
    got.push_back(close_after(port, [](ws_client& c) { c.send(opcode(11), ""); }));
  });
  for (auto& g : got) CHECK(g == std::pair<uint16_t, bool>{1002, true});
}

TEST_CASE("ws an unmasked client frame closes with 1002", "[ws][raw][masking]") {
  std::pair<uint16_t, bool> got;
  with_server(test_options(), [&](uint16_t port) {
    got = close_after(port, [](ws_client& c) { c.send(opcode::text, "hello", true, 0, false); });
  });
  CHECK(got == std::pair<uint16_t, bool>{1002, true});
}

TEST_CASE("ws fragmentation with pings interleaved: pongs first, then the whole message", "[ws][raw][fragmentation]") {
  std::vector<std::string> seen;
  std::pair<uint16_t, bool> bad_continuation;
  with_server(test_options(), [&](uint16_t port) {
    herd::blocking([&] {
      ws_client c;
      if (!c.upgraded(port)) return;
      c.send(opcode::text, "frag", false);
      c.send(opcode::ping, "p1");
      c.send(opcode::continuation, "ment", false);
      c.send(opcode::ping, "p2");
      c.send(opcode::continuation, "ed");
      for (int i = 0; i < 3; ++i)
        if (auto f = c.read()) seen.push_back(std::to_string(int(f->op)) + ":" + f->payload);
    });
    bad_continuation = close_after(port, [](ws_client& c) { c.send(opcode::continuation, "x"); });
  });
  CHECK(seen == std::vector<std::string>{"10:p1", "10:p2", "1:fragmented"});
  CHECK(bad_continuation == std::pair<uint16_t, bool>{1002, true});
}

TEST_CASE("ws control frames over 125 bytes or fragmented close with 1002", "[ws][raw][control]") {
  std::vector<std::pair<uint16_t, bool>> got;
  with_server(test_options(), [&](uint16_t port) {
    got.push_back(close_after(port, [](ws_client& c) { c.send(opcode::ping, std::string(126, 'p')); }));
    got.push_back(close_after(port, [](ws_client& c) { c.send(opcode::ping, "p", false); }));
  });
  for (auto& g : got) CHECK(g == std::pair<uint16_t, bool>{1002, true});
}

TEST_CASE("ws text that is not UTF-8 closes with 1007, also when the bad sequence is split across fragments", "[ws][raw][utf8]") {
  std::vector<std::pair<uint16_t, bool>> got;
  std::string good;
  with_server(test_options(), [&](uint16_t port) {
    got.push_back(close_after(port, [](ws_client& c) { c.send(opcode::text, "\xff"); }));
    got.push_back(close_after(port, [](ws_client& c) {
      c.send(opcode::text, "ok \xed", false);
      c.send(opcode::continuation, "\xa0\x80 surrogate");
    }));
    got.push_back(close_after(port, [](ws_client& c) {
      c.send(opcode::text, "\xf0\x90", false);
      c.send(opcode::continuation, "\x80");  // the message ends inside a sequence
    }));
    herd::blocking([&] {
      ws_client c;
      if (!c.upgraded(port)) return;
      c.send(opcode::text, "\xce", false);  // a valid sequence split across fragments
      c.send(opcode::continuation, "\xba\xe1\xbd\xb9");
      if (auto f = c.read()) good = f->payload;
    });
  });
  for (auto& g : got) CHECK(g == std::pair<uint16_t, bool>{1007, true});
  CHECK(good == "\xce\xba\xe1\xbd\xb9");
}

TEST_CASE("ws close codes: valid ones are echoed, invalid ones answered with 1002", "[ws][raw][close]") {
  std::vector<std::pair<uint16_t, uint16_t>> got;  // sent, answered
  with_server(test_options(), [&](uint16_t port) {
    for (uint16_t code : {1000, 1001, 3000, 4999, 999, 1005, 1006, 2000, 5000}) {
      auto r = close_after(port, [code](ws_client& c) {
        std::string p{char(code >> 8), char(code & 0xFF)};
        c.send(opcode::close, p);
      });
      got.emplace_back(code, r.second ? r.first : 0);
    }
    auto empty = close_after(port, [](ws_client& c) { c.send(opcode::close, ""); });
    got.emplace_back(0, empty.second ? uint16_t(empty.first + 1) : 0);  // an empty close is answered empty (code 0)
  });
  std::vector<std::pair<uint16_t, uint16_t>> want = {{1000, 1000}, {1001, 1001}, {3000, 3000}, {4999, 4999}, {999, 1002},
                                                     {1005, 1002}, {1006, 1002}, {2000, 1002}, {5000, 1002}, {0, 1}};
  CHECK(got == want);
}

TEST_CASE("ws a message over max_message closes with 1009", "[ws][raw][limits]") {
  std::pair<uint16_t, bool> whole, fragmented;
  with_server(test_options(), [&](uint16_t port) {
    whole = close_after(port, [](ws_client& c) { c.send(opcode::binary, std::string((1 << 17) + 1, 'b')); });
    fragmented = close_after(port, [](ws_client& c) {
      c.send(opcode::binary, std::string(1 << 16, 'b'), false);
      c.send(opcode::continuation, std::string((1 << 16) + 1, 'b'));
    });
  });
  CHECK(whole == std::pair<uint16_t, bool>{1009, true});
  CHECK(fragmented == std::pair<uint16_t, bool>{1009, true});
}

TEST_CASE("ws handshake errors: 426 with the version header, 400 for a bad key, and the socket closes", "[ws][raw][handshake]") {
  std::string v8, nokey;
  bool closed8 = false;
  with_server(test_options(), [&](uint16_t port) {
    herd::blocking([&] {
      ws_client a;
      v8 = a.open(port, {}, "8");
      closed8 = a.eof();
      ws_client b;
      b.sock.connect(port);
      b.sock.send_all("GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Version: 13\r\n\r\n");
      nokey = b.sock.recv_n(12, 10000);
    });
  });
  CHECK(v8.starts_with("HTTP/1.1 426 "));
  CHECK(v8.find("Sec-WebSocket-Version: 13\r\n") != std::string::npos);
  CHECK(closed8);
  CHECK(nokey == "HTTP/1.1 400");
}

TEST_CASE("ws a subprotocol is negotiated and the handler sees it", "[ws][raw][handshake]") {
  std::string head, seen;
  auto o = test_options();
  o.handshake.protocols = {"gateway.v1"};
  with_server(o, [&](uint16_t port) {
    ws_client c;
    head = herd::blocking([&] { return c.open(port, "Sec-WebSocket-Protocol: other, gateway.v1\r\n"); });
    seen = herd::receive([](const echo_opened& m) { return m.protocol; }, herd::after(10s, [] { return std::string("none"); }));
  });
  CHECK(head.find("Sec-WebSocket-Protocol: gateway.v1\r\n") != std::string::npos);
  CHECK(seen == "gateway.v1");
}
