// A WebSocket handler as a hot-swappable module (websocket/module.hpp), with
// the ws_counter fixture modules: live connections — some hibernated, sending
// nothing — move from v1 to v2 at a load, keep their state and their TCP
// connection, and v1 unloads; a file that fails to load and a version whose
// code_change throws both leave the connections on the version that runs.
// Client I/O runs on the blocking pool (herd::blocking).
#include "support/ws_client.hpp"
#include "support/ws_server.hpp"

#include "module_sandbox.hpp"
#include "ws_counter_api.hpp"

#include <herd/actors/introspect.hpp>
#include <herd/websocket/module.hpp>

#include <catch2/catch.hpp>

#include <memory>
#include <vector>

using namespace ws_test;
using herd::ws::opcode;
using namespace std::chrono_literals;
namespace m = ws_counter_msgs;
using module_fixture::sandbox;

namespace {

uint16_t start_module_server(const std::string& name, const herd::ws::options& o) {
  auto shared = std::make_shared<const herd::ws::options>(o);
  auto l = herd::net::start_listener(name, {.bind = "127.0.0.1", .max_connections = herd::net::infinity_connections},
                                     [shared](herd::net::tcp_socket s) {
    std::string rest;
    auto req = read_upgrade_head(s, rest);
    if (!req) return;
    (void)herd::ws::serve(std::move(s), *req, rest, herd::ws::module_handler("ws_counter"), shared);
  });
  return l ? l->port : 0;
}

// One text message, the answer's payload ("" if none came).
std::string ask(ws_client& c, std::string_view text) {
  return herd::blocking([&] {
    c.send(opcode::text, text);
    auto f = c.read();
    return f ? f->payload : std::string();
  });
}

herd::introspect::status state_of(herd::pid p) {
  auto d = herd::introspect::process_info(p);
  return d ? d->row.state : herd::introspect::status::exiting;
}

// Connections that ended so far (a m::ended in the mailbox).
int endings() {
  int n = 0;
  while (herd::receive([](const m::ended&) { return true; }, herd::after(0ms, [] { return false; }))) ++n;
  return n;
}

}  // namespace

TEST_CASE("ws module handler - live and hibernated connections switch from v1 to v2 at a load with their state, "
          "v1 unloads, a bad file and a throwing code_change keep v2 running",
          "[ws][module][hot_swap]") {
  sandbox box;
  std::string v1 = box.deploy("ws_counter_v1", "ws_counter_v1.so");
  std::string v2 = box.deploy("ws_counter_v2", "ws_counter_v2.so");
  std::string v3 = box.deploy("ws_counter_v3_throws", "ws_counter_v3.so");
  std::string broken = box.deploy("not_elf", "ws_counter_broken.so");
  constexpr int n = 16;  // even: busy; odd: idle until v2 is in
  int answered_v1 = 0, asleep = 0, answered_v2 = 0, pushed = 0, stayed_v2 = 0, ended_early = 0;
  uint64_t v3_failures = 0;
  bool v1_unloaded = false, broken_refused = false, v2_still_current = false;
  std::string broken_why;
  herd::test::run_node(net_test::node_opts(2), [&] {
    REQUIRE(herd::register_name(m::test_name, herd::self()));
    REQUIRE(herd::modules::load(v1));
    uint16_t port = start_module_server("ws_module", {.idle_hibernate = 10ms});
    REQUIRE(port != 0);
    std::vector<std::unique_ptr<ws_client>> clients;
    std::vector<herd::pid> conns;
    for (int i = 0; i < n; ++i) {
      auto c = std::make_unique<ws_client>();
      REQUIRE(herd::blocking([&] { return c->upgraded(port); }));
      herd::pid conn = herd::receive([](const m::hello& h) { return h.conn; },
                                     herd::after(10s, [] { return herd::pid{}; }));
      REQUIRE(conn.valid());
      answered_v1 += ask(*c, "a") == "v1 1";
      clients.push_back(std::move(c));
      conns.push_back(conn);
    }
    auto sleeping = [&] {
      int k = 0;
      for (herd::pid p : conns) k += state_of(p) == herd::introspect::status::hibernated;
      return k;
    };
    REQUIRE(herd::test::eventually([&] { return sleeping() == n; }, 20s));
    asleep = sleeping();
    // The busy half talks while v2 loads; the idle half sends nothing.
    REQUIRE(herd::modules::load(v2));
    for (int i = 0; i < n; i += 2) answered_v2 += ask(*clients[i], "b") == "v2 2";
    v1_unloaded = herd::test::eventually([] { return module_fixture::info("ws_counter", "v1").state.empty(); }, 20s);
    for (int i = 1; i < n; i += 2) {
      herd::send(conns[i], m::push{"pushed"});
      pushed += herd::blocking([&] {
        auto f = clients[i]->read();
        return f && f->payload == "pushed";
      });
      answered_v2 += ask(*clients[i], "b") == "v2 2";
    }
    // A file that is no module: refused, v2 stays current.
    auto bad = herd::modules::load(broken);
    broken_refused = !bad;
    broken_why = module_fixture::why(bad);
    v2_still_current = module_fixture::info("ws_counter", "v2").state == "current";
    // v3 loads but cannot take v2's state: every connection (the idle ones
    // woken by the code change) stays on v2.
    REQUIRE(herd::modules::load(v3));
    herd::test::eventually([&] { return module_fixture::info("ws_counter", "v3").switch_failures >= uint64_t(n); }, 20s);
    v3_failures = module_fixture::info("ws_counter", "v3").switch_failures;
    for (auto& c : clients) stayed_v2 += ask(*c, "c") == "v2 3";
    ended_early = endings();
    (void)herd::net::stop_listener("ws_module");
    clients.clear();
    herd::unregister_name(m::test_name);
  });
  CHECK(answered_v1 == n);
  CHECK(asleep == n);
  CHECK(answered_v2 == n);
  CHECK(pushed == n / 2);
  CHECK(v1_unloaded);
  CHECK(broken_refused);
  INFO(broken_why);
  CHECK(broken_why.find("not_a_shared_object") != std::string::npos);
  CHECK(v2_still_current);
  CHECK(v3_failures == uint64_t(n));
  CHECK(stayed_v2 == n);
  CHECK(ended_early == 0);
}

TEST_CASE("ws module handler - a module that is not loaded is a clear module_error from the connection's process",
          "[ws][module]") {
  std::string what;
  herd::test::run_node(net_test::node_opts(1), [&] {
    try {
      (void)herd::ws::module_handler("ws_no_such_module");
    } catch (const herd::module_error& e) {
      what = e.what();
    }
  });
  INFO(what);
  CHECK(what.find("ws_no_such_module") != std::string::npos);
}

TEST_CASE("ws module handler - the module's closing() runs once, when the close handshake starts, before terminate()",
          "[ws][module]") {
  sandbox box;
  std::string v1 = box.deploy("ws_counter_v1", "ws_counter_v1.so");
  std::vector<std::string> order;  // what the connection told, in order
  uint16_t closing_code = 0, peer_close = 0;
  herd::test::run_node(net_test::node_opts(2), [&] {
    REQUIRE(herd::register_name(m::test_name, herd::self()));
    REQUIRE(herd::modules::load(v1));
    uint16_t port = start_module_server("ws_module_closing", {});
    REQUIRE(port != 0);
    ws_client c;
    REQUIRE(herd::blocking([&] { return c.upgraded(port); }));
    herd::pid conn = herd::receive([](const m::hello& h) { return h.conn; }, herd::after(10s, [] { return herd::pid{}; }));
    REQUIRE(conn.valid());
    CHECK(ask(c, "one") == "v1 1");
    // The peer closes: the connection answers (its close frame is queued) and
    // stops taking frames — closing() — then ends — terminate().
    peer_close = herd::blocking([&] {
      std::string close;
      herd::ws::write_close(close, 1000, {}, 0x01020304);
      c.send_raw(close);
      auto f = c.read();
      return f && f->op == opcode::close ? f->close_code() : uint16_t(0);
    });
    for (bool more = true; more;) {
      more = herd::receive(
          [&](const m::closing& x) {
            order.push_back("closing " + x.version);
            closing_code = x.sent;
            return x.conn == conn;
          },
          [&](const m::ended& x) {
            order.push_back("ended " + x.version);
            return false;
          },
          herd::after(10s, [] { return false; }));
    }
    // Nothing more comes from it (closing() ran once).
    while (herd::receive([&](const m::closing&) { return true; }, herd::after(0ms, [] { return false; })))
      order.push_back("closing again");
    (void)herd::net::stop_listener("ws_module_closing");
    herd::unregister_name(m::test_name);
  });
  CHECK(peer_close == 1000);
  CHECK(order == std::vector<std::string>{"closing v1", "ended v1"});
  CHECK(closing_code == 1000);
}
