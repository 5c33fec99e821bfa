// A C string sent (a literal, a char array, a char*) travels as std::string:
// it is matched by a `const std::string&` handler instead of sitting in the
// mailbox as an unmatched `const char*` until the receive's `after` fires.
// The same holds for send by name, send_after, cast, call and reply.
#include <herd/actors.hpp>
#include <herd/actors/server.hpp>

#include <catch2/catch.hpp>

#include "support/node_fixture.hpp"

#include <cstring>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using herd::test::run_node;

namespace c_string_test_msgs {
struct seen {};
// Answers a std::string request with a literal; keeps the casts it got.
struct greeter : herd::server<greeter> {
  using calls = herd::types<std::string, seen>;
  using casts = herd::types<std::string>;
  const char* handle_call(const std::string& who) { return who == "world" ? "hello, world" : "hello"; }
  std::vector<std::string> handle_call(seen) { return casts_seen; }
  void handle_cast(std::string s) { casts_seen.push_back(std::move(s)); }
  std::vector<std::string> casts_seen;
};
}  // namespace c_string_test_msgs

using namespace c_string_test_msgs;

// The next message, as a std::string, or "<type name>" when it is something
// else, or "<none>" when the mailbox has nothing within `wait`.
static std::string next_string(std::chrono::milliseconds wait) {
  return herd::receive([](std::string s) { return s; },
                       [](const herd::any_message& m) { return std::string("<").append(m.type_name()).append(">"); },
                       herd::after(wait, [] { return std::string("<none>"); }));
}

TEST_CASE("a string literal, a char array and a char* sent arrive as std::string, copied at the send",
          "[receive][c_string]") {
  std::vector<std::string> got;
  auto r = run_node(herd::test::opts(1), [&] {
    herd::pid me = herd::self();
    herd::send(me, "literal");
    char buf[16];
    std::strcpy(buf, "array");
    herd::send(me, buf);
    char* p = buf;
    herd::send(me, p);
    const char* cp = "const pointer";
    herd::send(me, cp);
    std::strcpy(buf, "changed");  // the messages hold copies, not the sender's memory
    for (int i = 0; i < 4; ++i) got.push_back(next_string(0ms));
    // What the README's first program does: the handler takes const std::string&.
    herd::send(me, "hello");
    got.push_back(herd::receive([](const std::string& s) { return s; }, herd::after(0ms, [] { return std::string("<none>"); })));
  });
  CHECK(r.is_normal());
  CHECK(got == std::vector<std::string>{"literal", "array", "array", "const pointer", "hello"});
}

TEST_CASE("a string literal sent by name, with send_after and with cast arrives as std::string",
          "[receive][c_string]") {
  std::vector<std::string> got;
  bool by_name = false;
  auto r = run_node(herd::test::opts(2), [&] {
    herd::pid me = herd::self();
    REQUIRE(herd::register_name("c_string_test.me", me));
    by_name = herd::send("c_string_test.me", "by name");
    got.push_back(next_string(0ms));
    herd::send_after(1ms, me, "after");
    got.push_back(next_string(30s));
    herd::send_after(1ms, "c_string_test.me", "after, by name");
    got.push_back(next_string(30s));
    herd::cast(me, "cast");
    got.push_back(herd::receive([](herd::cast_request<std::string>&& c) { return c.msg; },
                                [](const herd::any_message& m) { return std::string("<").append(m.type_name()).append(">"); }));
    herd::unregister_name("c_string_test.me");
  });
  CHECK(r.is_normal());
  CHECK(by_name);
  CHECK(got == std::vector<std::string>{"by name", "after", "after, by name", "cast"});
}

TEST_CASE("call with a string literal request and a literal reply: both travel as std::string",
          "[call][c_string]") {
  std::string plain, typed, typed_other;
  std::vector<std::string> casts_seen;
  auto r = run_node(herd::test::opts(2), [&] {
    herd::pid server = herd::spawn([] {
      herd::receive([](herd::call_request<std::string>&& c) { herd::reply(c.from, c.req == "ping" ? "pong" : "?"); });
    });
    plain = herd::call<std::string>(server, "ping");
    auto g = herd::start_server<greeter>();
    typed = g.call("world");  // reply type: std::string, for a handle_call returning const char*
    typed_other = herd::call<std::string>(g, std::string("you"));
    g.cast("a cast");
    casts_seen = g.call(seen{});  // taken in order after the cast
    (void)herd::stop_server(g);
  });
  CHECK(r.is_normal());
  CHECK(plain == "pong");
  CHECK(typed == "hello, world");
  CHECK(typed_other == "hello");
  CHECK(casts_seen == std::vector<std::string>{"a cast"});
}
