// One compiled net::protocol module (the push_protocol fixture, the one the
// TCP protocol tests use) served over memory transports by serve_module:
// lines, pushes, a 256 KiB reply through a 64 KiB buffer, a hot swap of a
// hibernated connection, and on_close when the client closes.
#include "net_fixture.hpp"

#include "module_sandbox.hpp"
#include "push_protocol_api.hpp"

#include <herd/actors/introspect.hpp>
#include <herd/net/memory_transport.hpp>
#include <herd/net/protocol.hpp>

using namespace net_test;
namespace m = push_protocol_msgs;
using herd::net::memory_transport;
using module_fixture::sandbox;

namespace {

// Reads until `n` bytes came (or an error / 10 s).
std::string read_n(memory_transport& t, std::size_t n) {
  std::string out;
  while (out.size() < n) {
    auto r = t.recv(0, 10s);
    if (!r) break;
    out += r->view();
  }
  return out;
}

std::string ask(memory_transport& t, std::string_view line, std::size_t n) {
  if (!t.send(line)) return "send failed";
  return read_n(t, n);
}

bool hibernated(herd::pid p) {
  auto d = herd::introspect::process_info(p);
  return d && d->row.state == herd::introspect::status::hibernated;
}

}  // namespace

TEST_CASE("a protocol module runs over a memory transport: lines, a push, a large reply, a hot swap, on_close",
          "[net][memory][protocol]") {
  sandbox box;
  std::string v1 = box.deploy("push_v1", "push_v1.so");
  std::string v2 = box.deploy("push_v2", "push_v2.so");
  std::string first, pushed, slow_reply, after_swap, closed_version;
  bool slept = false, closed_clean = false;
  herd::pid conn, closed_conn;
  herd::test::run_node(node_opts(2), [&] {
    REQUIRE(herd::register_name(m::test_name, herd::self()));
    REQUIRE(herd::modules::load(v1));
    auto c = herd::net::memory_connect([](memory_transport t) {
      herd::net::serve_module("push_protocol", std::move(t), {.idle_hibernate = 10ms});
    });
    REQUIRE(c);
    conn = herd::receive([](const m::hello& h) { return h.conn; }, herd::after(10s, [] { return herd::pid{}; }));
    REQUIRE(conn == c->server);
    auto& t = c->client;
    first = ask(t, "line\n", 5);
    herd::spawn([conn = conn] { herd::send(conn, m::push{"hello from a pusher"}); });
    pushed = read_n(t, 20);
    // The reply is four times the buffer: the module's send waits for us.
    REQUIRE(t.send("slow\n"));
    REQUIRE(herd::receive([](const m::busy& b) { return b.conn; }, herd::after(10s, [] { return herd::pid{}; })) ==
            conn);
    herd::send(conn, m::release{});
    slow_reply = read_n(t, 256 * 1024 + 5);
    slept = herd::test::eventually([&] { return hibernated(conn); }, 10s);
    REQUIRE(herd::modules::load(v2));  // the sleeping connection switches
    after_swap = ask(t, "line\n", 5);
    t.close();
    auto cl = herd::receive([](const m::closed& x) { return x; },
                            herd::after(10s, [] { return m::closed{herd::pid{}, "", false}; }));
    closed_conn = cl.conn;
    closed_version = cl.version;
    closed_clean = cl.replied_all;
    REQUIRE(herd::test::eventually_gone(conn));
    herd::unregister_name(m::test_name);
  });
  CHECK(first == "v1 1\n");
  CHECK(pushed == "hello from a pusher\n");
  CHECK(slow_reply == std::string(256 * 1024, 'x') + "\nend\n");
  CHECK(slept);
  CHECK(after_swap == "v2 2\n");
  CHECK(closed_conn == conn);
  CHECK(closed_version == "v2");
  CHECK(closed_clean);
}
