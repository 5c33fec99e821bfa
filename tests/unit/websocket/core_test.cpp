// The sans-I/O core: SHA-1 and the accept key (test vectors), the UTF-8
// validator, the frame parser rule by rule (RFC 6455 sections as the
// Autobahn suite groups them), the handshake's answers and the session's
// queue accounting. No sockets, no node.
#include <herd/websocket/frame.hpp>
#include <herd/websocket/handshake.hpp>
#include <herd/websocket/parser.hpp>
#include <herd/websocket/session.hpp>
#include <herd/websocket/utf8.hpp>

#include "sha1.hpp"

#include <catch2/catch.hpp>

#include <vector>

using namespace herd::ws;
using kind = event::kind;

namespace {

std::string hex(const std::array<uint8_t, 20>& d) {
  static const char* x = "0123456789abcdef";
  std::string s;
  for (auto b : d) s += x[b >> 4], s += x[b & 15];
  return s;
}

std::string frame(opcode op, std::string_view p, bool fin = true, uint8_t rsv = 0) {
  std::string out;
  write_frame(out, op, p, fin, 0x37fa213d, rsv);
  return out;
}

// An event with its payload copied (an event's view lasts until the next call).
struct owned {
  kind type;
  std::string payload;
  uint16_t code;
};
std::vector<owned> all(frame_parser& p) {
  std::vector<owned> v;
  while (auto e = p.next()) v.push_back({e->type, std::string(e->payload), e->code});
  return v;
}

// Feeds `bytes` whole and byte by byte: both must give the same kinds/codes.
std::vector<std::pair<kind, uint16_t>> parse(std::string_view bytes, parser_options o = {}) {
  std::vector<std::pair<kind, uint16_t>> whole, split;
  frame_parser a(o), b(o);
  a.feed(bytes);
  for (auto& e : all(a)) whole.emplace_back(e.type, e.code);
  for (char c : bytes) {
    b.feed(std::string_view(&c, 1));
    for (auto& e : all(b)) split.emplace_back(e.type, e.code);
  }
  CHECK(whole == split);
  return whole;
}

using P = std::vector<std::pair<kind, uint16_t>>;

}  // namespace

TEST_CASE("SHA-1 and base64 give the FIPS and RFC 4648 test vectors", "[ws][core]") {
  CHECK(hex(detail::sha1("")) == "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  CHECK(hex(detail::sha1("abc")) == "a9993e364706816aba3e25717850c26c9cd0d89d");
  CHECK(hex(detail::sha1("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")) ==
        "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  CHECK(hex(detail::sha1(std::string(1000000, 'a'))) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
  auto b = [](std::string_view s) { return detail::base64(reinterpret_cast<const uint8_t*>(s.data()), s.size()); };
  CHECK(b("") == "");
  CHECK(b("f") == "Zg==");
  CHECK(b("fo") == "Zm8=");
  CHECK(b("foobar") == "Zm9vYmFy");
  CHECK(detail::base64_decoded_size("dGhlIHNhbXBsZSBub25jZQ==") == 16);
  CHECK(detail::base64_decoded_size("dGhlIHNhbXBsZSBub25jZQ=") == -1);
  CHECK(detail::base64_decoded_size("dGhl=HNhbXBsZSBub25jZQ==") == -1);
}

TEST_CASE("the accept key of RFC 6455 section 1.3", "[ws][core]") {
  CHECK(accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

TEST_CASE("UTF-8: valid text passes and every kind of invalid sequence fails, split anywhere", "[ws][core][utf8]") {
  std::vector<std::string> good = {"", "hello", "\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5", "\xf4\x8f\xbf\xbf",
                                   "\xed\x9f\xbf", "\xef\xbf\xbf", "\xf0\x90\x80\x80"};
  std::vector<std::string> bad = {"\x80", "\xc0\xaf", "\xc1\xbf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xed\xbf\xbf",
                                  "\xf0\x8f\xbf\xbf", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xff", "\xce",
                                  "\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xed\xa0\x80" "edited"};
  for (auto& s : good) {
    INFO(s);
    CHECK(valid_utf8(s));
    for (std::size_t cut = 0; cut <= s.size(); ++cut) {
      utf8_validator v;
      v.feed(s.substr(0, cut));
      v.feed(s.substr(cut));
      CHECK(v.complete());
    }
  }
  for (auto& s : bad) {
    INFO(s);
    CHECK_FALSE(valid_utf8(s));
    for (std::size_t cut = 0; cut <= s.size(); ++cut) {
      utf8_validator v;
      v.feed(s.substr(0, cut));
      v.feed(s.substr(cut));
      CHECK_FALSE(v.complete());
    }
  }
  utf8_validator fast;  // fail fast: the first bad byte, not the end of the message
  CHECK_FALSE(fast.feed("ok\xed\xa0"));
}

TEST_CASE("framing: text, binary, lengths 0 125 126 65535 65536, and several frames in one read", "[ws][core][framing]") {
  for (std::size_t n : {0, 1, 125, 126, 127, 65535, 65536}) {
    std::string payload(n, 'x');
    frame_parser p({.max_message = 1 << 20});
    p.feed(frame(opcode::binary, payload) + frame(opcode::text, "hi"));
    auto v = all(p);
    REQUIRE(v.size() == 2);
    CHECK(v[0].type == kind::binary);
    CHECK(v[0].payload == payload);
    CHECK(v[1].type == kind::text);
    CHECK(v[1].payload == "hi");
  }
}

TEST_CASE("reserved bits and opcodes fail with 1002", "[ws][core][reserved]") {
  for (uint8_t rsv : {1, 2, 4, 7}) CHECK(parse(frame(opcode::text, "x", true, rsv)) == P{{kind::fail, 1002}});
  for (uint8_t op : {3, 4, 5, 6, 7, 11, 12, 13, 14, 15}) {
    std::string f = frame(opcode::text, "x");
    f[0] = char(0x80 | op);
    CHECK(parse(f) == P{{kind::fail, 1002}});
  }
  // A good message first is still delivered.
  CHECK(parse(frame(opcode::text, "a") + frame(opcode::text, "b", true, 4)) == P{{kind::text, 0}, {kind::fail, 1002}});
}

TEST_CASE("an unmasked client frame fails with 1002", "[ws][core][masking]") {
  std::string f;
  write_frame(f, opcode::text, "hello");
  CHECK(parse(f) == P{{kind::fail, 1002}});
  std::string masked = frame(opcode::text, "hello");
  CHECK(parse(masked, {.require_mask = false}) == P{{kind::fail, 1002}});  // a client refuses masked server frames
}

TEST_CASE("control frames: 125 bytes at most, never fragmented, interleaved in fragmented messages", "[ws][core][control]") {
  CHECK(parse(frame(opcode::ping, std::string(125, 'p'))) == P{{kind::ping, 0}});
  CHECK(parse(frame(opcode::ping, std::string(126, 'p'))) == P{{kind::fail, 1002}});
  CHECK(parse(frame(opcode::ping, "x", false)) == P{{kind::fail, 1002}});
  CHECK(parse(frame(opcode::pong, "")) == P{{kind::pong, 0}});
  frame_parser p;
  p.feed(frame(opcode::text, "Hel", false) + frame(opcode::ping, "p1") + frame(opcode::continuation, "lo ", false) +
         frame(opcode::pong, "") + frame(opcode::continuation, "world"));
  auto v = all(p);
  REQUIRE(v.size() == 3);
  CHECK(v[0].type == kind::ping);
  CHECK(v[0].payload == "p1");
  CHECK(v[1].type == kind::pong);
  CHECK(v[2].type == kind::text);
  CHECK(v[2].payload == "Hello world");
}

TEST_CASE("fragmentation: continuation rules", "[ws][core][fragmentation]") {
  CHECK(parse(frame(opcode::continuation, "x")) == P{{kind::fail, 1002}});
  CHECK(parse(frame(opcode::text, "a", false) + frame(opcode::text, "b")) == P{{kind::fail, 1002}});
  CHECK(parse(frame(opcode::binary, "a", false) + frame(opcode::continuation, "") + frame(opcode::text, "t")) ==
        P{{kind::binary, 0}, {kind::text, 0}});
  CHECK(parse(frame(opcode::text, "", false) + frame(opcode::continuation, "", false) + frame(opcode::continuation, "")) ==
        P{{kind::text, 0}});
}

TEST_CASE("UTF-8 in text messages: 1007, also for a sequence split across fragments", "[ws][core][utf8]") {
  CHECK(parse(frame(opcode::text, "\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5")) == P{{kind::text, 0}});
  CHECK(parse(frame(opcode::text, "\xce", false) + frame(opcode::continuation, "\xba")) == P{{kind::text, 0}});
  CHECK(parse(frame(opcode::text, "\xf0\x90", false) + frame(opcode::continuation, "\x80", false) +
              frame(opcode::continuation, "\x80")) == P{{kind::text, 0}});
  CHECK(parse(frame(opcode::text, "\xed", false) + frame(opcode::continuation, "\xa0\x80")) == P{{kind::fail, 1007}});
  CHECK(parse(frame(opcode::text, "ok\xce", false) + frame(opcode::continuation, "")) == P{{kind::fail, 1007}});
  CHECK(parse(frame(opcode::text, "\xff")) == P{{kind::fail, 1007}});
  CHECK(parse(frame(opcode::binary, "\xff")) == P{{kind::binary, 0}});  // binary is not checked
  // Fail fast: the bad first fragment fails before the message would end.
  CHECK(parse(frame(opcode::text, "\xc0\xaf", false)) == P{{kind::fail, 1007}});
}

TEST_CASE("close frames: codes, reasons, and nothing after a close", "[ws][core][close]") {
  auto close_with = [](uint16_t code, std::string_view reason = {}) {
    std::string out;
    write_close(out, code, reason, 0x11223344);
    return out;
  };
  for (uint16_t c : {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 3000, 3999, 4000, 4999})
    CHECK(parse(close_with(c)) == P{{kind::close, c}});
  for (uint16_t c : {0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535})
    CHECK(parse(close_with(c)) == P{{kind::fail, 1002}});
  CHECK(parse(frame(opcode::close, "")) == P{{kind::close, close_code::no_status}});
  CHECK(parse(frame(opcode::close, "x")) == P{{kind::fail, 1002}});
  CHECK(parse(close_with(1000, "\xce\xba")) == P{{kind::close, 1000}});
  CHECK(parse(close_with(1000, "\xce")) == P{{kind::fail, 1007}});
  CHECK(parse(close_with(1000) + frame(opcode::text, "after")) == P{{kind::close, 1000}});
}

TEST_CASE("limits: a message over max_message fails with 1009 before it is buffered", "[ws][core][limits]") {
  parser_options o{.max_message = 100};
  CHECK(parse(frame(opcode::binary, std::string(100, 'b')), o) == P{{kind::binary, 0}});
  CHECK(parse(frame(opcode::binary, std::string(60, 'b'), false) + frame(opcode::continuation, std::string(41, 'b')), o) ==
        P{{kind::fail, 1009}});
  // Only the header of a huge frame is needed to refuse it.
  std::string header = frame(opcode::binary, std::string(70000, 'x')).substr(0, 14);
  CHECK(parse(header, o) == P{{kind::fail, 1009}});
  // 64-bit length with the top bit set.
  std::string f("\x82\xff\x80\x00\x00\x00\x00\x00\x00\x01\0\0\0\0", 14);
  CHECK(parse(f, {.max_message = SIZE_MAX}) == P{{kind::fail, 1002}});
}

namespace {
herd::http::request upgrade_request() {
  herd::http::request r;
  r.method = "GET";
  r.target = r.path = "/ws";
  r.headers = {{"Host", "x"}, {"Upgrade", "websocket"}, {"Connection", "keep-alive, Upgrade"},
               {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}, {"Sec-WebSocket-Version", "13"}};
  return r;
}
void set(herd::http::request& r, std::string_view name, std::string value) {
  for (auto& h : r.headers)
    if (h.name == name) return void(h.value = std::move(value));
  r.headers.push_back({std::string(name), std::move(value)});
}
}  // namespace

TEST_CASE("the handshake: 101 with the accept key, subprotocol choice, and each refusal's status", "[ws][core][handshake]") {
  auto ok = accept_upgrade(upgrade_request());
  CHECK(ok.accepted);
  CHECK(ok.response.starts_with("HTTP/1.1 101 Switching Protocols\r\n"));
  CHECK(ok.response.find("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n") != std::string::npos);
  CHECK(ok.response.find("Sec-WebSocket-Protocol") == std::string::npos);
  CHECK(ok.response.ends_with("\r\n\r\n"));

  auto r = upgrade_request();
  set(r, "Sec-WebSocket-Protocol", "chat.v2, chat.v1");
  auto p = accept_upgrade(r, {.protocols = {"chat.v1", "chat.v2"}});
  CHECK(p.protocol == "chat.v1");  // the server's preference among those offered
  CHECK(p.response.find("Sec-WebSocket-Protocol: chat.v1\r\n") != std::string::npos);
  CHECK(accept_upgrade(r, {.protocols = {"other"}}).protocol.empty());
  CHECK(accept_upgrade(r, {.protocols = {"CHAT.V1"}}).protocol.empty());

  auto status_with = [](std::string_view name, std::string value) {
    auto q = upgrade_request();
    set(q, name, std::move(value));
    return accept_upgrade(q);
  };
  auto v = status_with("Sec-WebSocket-Version", "8");
  CHECK(v.status == 426);
  CHECK(v.response.find("Sec-WebSocket-Version: 13\r\n") != std::string::npos);
  CHECK(status_with("Upgrade", "h2c").status == 400);
  CHECK(status_with("Connection", "keep-alive").status == 400);
  CHECK(status_with("Sec-WebSocket-Key", "short").status == 400);
  CHECK(status_with("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ").status == 400);
  auto post = upgrade_request();
  post.method = "POST";
  CHECK(accept_upgrade(post).status == 405);
  auto old = upgrade_request();
  old.version_minor = 0;
  CHECK(accept_upgrade(old).status == 400);
  CHECK(status_with("Upgrade", "WebSocket").accepted);  // tokens are case-insensitive
  CHECK(is_upgrade(upgrade_request()));
  CHECK_FALSE(is_upgrade(post));
}

TEST_CASE("session: pings answered, the close echoed, the queue counted in frames and bytes", "[ws][core][session]") {
  session s;
  s.feed(frame(opcode::ping, "abc"));
  auto e = s.next();
  REQUIRE(e);
  CHECK(e->type == kind::ping);
  CHECK(s.queued_frames() == 1);
  CHECK(s.pending() == std::string("\x8a\x03" "abc", 5));
  s.text("one");
  s.binary(std::string(200, 'b'));
  CHECK(s.queued_frames() == 3);
  CHECK(s.queued_bytes() == 5 + 5 + 204);
  s.written(7);  // the pong and two bytes of "one"
  CHECK(s.queued_frames() == 2);
  CHECK(s.queued_bytes() == 3 + 204);
  s.written(s.pending().size());
  CHECK(s.queued_frames() == 0);
  std::string c;
  write_close(c, 1000, "", 0x01020304);
  s.feed(c);
  e = s.next();
  REQUIRE(e);
  CHECK(e->type == kind::close);
  CHECK(s.status() == session::state::closed);
  CHECK(s.pending() == std::string("\x88\x02\x03\xe8", 4));
  s.text("late");  // ignored after the close
  CHECK(s.queued_frames() == 1);

  session bad;
  std::string unmasked;
  write_frame(unmasked, opcode::text, "x");
  bad.feed(unmasked);
  e = bad.next();
  REQUIRE(e);
  CHECK(e->type == kind::fail);
  CHECK(bad.sent_code() == 1002);
  CHECK(bad.pending().substr(0, 1) == "\x88");  // a close frame with 1002 and the reason
  CHECK(bad.pending().substr(2, 2) == std::string("\x03\xea", 2));
  CHECK(bad.pending().substr(4) == "unmasked client frame");
}

TEST_CASE("an idle parser and session hold no buffer after shrink", "[ws][core][memory]") {
  session s({.max_message = 1 << 20});
  s.feed(frame(opcode::binary, std::string(100000, 'x')));
  auto e = s.next();
  REQUIRE(e);
  CHECK(e->payload.size() == 100000);
  CHECK_FALSE(s.next());
  s.shrink();
  CHECK(s.buffered() == 0);
  CHECK(sizeof(session) <= 256);
}

TEST_CASE("session: a slow consumer's unstarted frames are dropped, the frame in progress is kept whole", "[ws][core][session]") {
  session s;
  s.text("aaaa");
  s.text("bbbb");
  s.text("cccc");
  s.written(3);  // inside the first frame (6 bytes)
  s.drop_unstarted();
  CHECK(s.queued_frames() == 1);
  CHECK(s.pending() == "aaa");
  s.close(1008);
  CHECK(s.queued_frames() == 2);
  s.written(s.pending().size());
  CHECK(s.queued_bytes() == 0);

  session t;
  t.text("x");
  t.text("y");
  t.written(3);  // exactly the first frame
  t.drop_unstarted();
  CHECK(t.queued_frames() == 0);
  CHECK(t.pending().empty());
}
