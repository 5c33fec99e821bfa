// The observer shows a WebSocket connection's protocol and outbound queue
// (introspect::set_protocol / set_out_queue), in the `processes` and
// `process` replies and in herd-observer's table, against a live node: a
// client that sends large messages and reads none of the echoes makes the
// queue grow; once it reads them all, the queue shows empty. An HTTP
// connection shows "http", hibernated too, and "websocket" once upgraded.
#include "../../observer/observer_fixture.hpp"
#include "support/ws_client.hpp"
#include "support/ws_server.hpp"

#include <herd/http/router.hpp>
#include <herd/http/server.hpp>

#include <cstdio>
#include <sstream>

using namespace observer_test;
using namespace std::chrono_literals;
using herd::ws::opcode;

namespace {

std::atomic<uint16_t> echo_port{0};

// The rows of connection processes that say they speak `protocol`.
std::vector<json> protocol_rows(client& c, const char* protocol) {
  json r = c.ask(req("processes", {{"kind", "connection"}, {"limit", 1000}}));
  std::vector<json> out;
  for (auto& p : r.at("result").at("processes"))
    if (p.at("protocol").is_string() && p.at("protocol") == protocol) out.push_back(p);
  return out;
}

std::vector<json> websocket_rows(client& c) { return protocol_rows(c, "websocket"); }

// Whether a whitespace-separated word of `text` is exactly `w` (a table cell).
bool has_word(const std::string& text, const std::string& w) {
  std::istringstream in(text);
  for (std::string word; in >> word;)
    if (word == w) return true;
  return false;
}

std::atomic<uint16_t> http_port{0};

// /hello, and /ws upgraded to the echo handler, as the push gateway serves them.
uint16_t start_http_server(const std::string& name, herd::http::server_options o) {
  herd::http::router r;
  r.get("/hello", [](herd::http::request&, const herd::http::bindings&) {
    return herd::http::response::text(200, "hello");
  });
  r.upgrade("/ws", [](herd::net::tcp_socket s, herd::http::request q, std::string rest) {
    (void)herd::ws::serve(std::move(s), q, rest, std::make_unique<ws_test::echo_handler>(herd::pid{}),
                          herd::ws::options{});
  });
  auto l = herd::net::start_listener(name, {.bind = "127.0.0.1", .port = 0}, herd::http::serve(std::move(r), o));
  return l ? l->port : 0;
}

// One response with a Content-Length body ("" when the connection ended first).
std::string read_response(ws_test::ws_client& w) {
  std::string head;
  while (head.find("\r\n\r\n") == std::string::npos) {
    std::string b = w.sock.recv_n(1, 10000);
    if (b.empty()) return "";
    head += b;
  }
  auto at = head.find("Content-Length: ");
  std::size_t n = at == std::string::npos ? 0 : std::stoul(head.substr(at + 16));
  return head + w.sock.recv_n(n, 10000);
}

std::string run_cli(const std::string& socket) {
  std::string cmd = std::string(HERD_OBSERVER_CLI) + " --socket '" + socket + "' processes --limit 1000";
  std::string out;
  if (FILE* f = ::popen(cmd.c_str(), "r")) {
    char b[4096];
    std::size_t n;
    while ((n = std::fread(b, 1, sizeof b, f)) > 0) out.append(b, n);
    ::pclose(f);
  }
  return out;
}

}  // namespace

TEST_CASE("ws observer - a WebSocket connection shows its protocol and its outbound queue in frames and bytes",
          "[ws][observer]") {
  live_node n(2, [](root_ctx&) {
    echo_port = ws_test::start_echo_server(
        "ws_observed", {.max_queued_frames = 100000, .max_queued_bytes = std::size_t(1) << 30});
  });
  REQUIRE(echo_port != 0);
  client c(n.socket());
  ws_test::ws_client ws;
  REQUIRE(ws.upgraded(echo_port));
  REQUIRE(eventually([&] { return websocket_rows(c).size() == 1; }));

  // Plain processes say nothing: protocol null and no queue fields.
  json all = c.ask(req("processes", {{"limit", 1000}})).at("result");
  int plain = 0;
  for (auto& p : all.at("processes"))
    if (p.at("protocol").is_null()) plain += !p.contains("out_frames") && !p.contains("out_bytes");
  CHECK(plain == int(all.at("processes").size()) - 1);

  // Echoes pile up once the kernel's buffers are full: 1 MiB a batch, up to 256 MiB.
  const std::string big(60000, 'x');
  json row;
  for (int batch = 0; batch < 256; ++batch) {
    for (int i = 0; i < 17; ++i) ws.send(opcode::text, big);
    auto rows = websocket_rows(c);
    REQUIRE(rows.size() == 1);
    row = rows[0];
    if (row.at("out_frames").get<uint64_t>() > 1) break;
  }
  uint64_t frames = row.at("out_frames").get<uint64_t>(), bytes = row.at("out_bytes").get<uint64_t>();
  INFO(row.dump());
  CHECK(frames > 1);
  // Each echo is 60,004 bytes; the first may be partly written.
  CHECK(bytes > (frames - 1) * 60004);
  CHECK(bytes <= frames * 60004);
  json detail = c.ask(req("process", {{"pid", row.at("pid")}})).at("result");
  CHECK(detail.at("protocol") == "websocket");
  CHECK(detail.at("out_frames").get<uint64_t>() > 0);

  std::string table = run_cli(n.socket());
  INFO(table);
  CHECK(table.find("PROTOCOL") != std::string::npos);
  CHECK(table.find("OUT QUEUE") != std::string::npos);
  CHECK(table.find("websocket") != std::string::npos);

  // The client reads every echo: the queue empties.
  ws.send(opcode::text, "last");
  bool got_last = false;
  for (int i = 0; i < 100000 && !got_last; ++i) {
    auto f = ws.read();
    if (!f) break;
    got_last = f->payload == "last";
  }
  CHECK(got_last);
  CHECK(eventually([&] {
    auto rows = websocket_rows(c);
    return rows.size() == 1 && rows[0].at("out_frames") == 0 && rows[0].at("out_bytes") == 0;
  }));
  // Closed: the connection no longer shows.
  ws.send(opcode::close, std::string("\x03\xe8", 2));
  (void)ws.expect_close();
  CHECK(eventually([&] { return websocket_rows(c).empty(); }));
}

TEST_CASE("http observer - an HTTP connection shows protocol http, hibernated too, and websocket once it upgrades",
          "[ws][http][observer]") {
  // Hibernates as soon as it is idle: the label must survive the stack's release.
  live_node n(2, [](root_ctx&) { http_port = start_http_server("http_observed", {.idle_hibernate = 1ms}); });
  REQUIRE(http_port != 0);
  client c(n.socket());
  ws_test::ws_client w;
  REQUIRE(w.sock.connect(http_port));
  w.sock.send_all("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string got = read_response(w);
  INFO(got);
  REQUIRE(got.starts_with("HTTP/1.1 200"));

  REQUIRE(eventually([&] {
    auto rows = protocol_rows(c, "http");
    return rows.size() == 1 && rows[0].at("hibernated") == true;
  }));
  json row = protocol_rows(c, "http").at(0);
  json detail = c.ask(req("process", {{"pid", row.at("pid")}})).at("result");
  CHECK(detail.at("protocol") == "http");
  std::string table = run_cli(n.socket());
  INFO(table);
  CHECK(table.find("PROTOCOL") != std::string::npos);
  CHECK(has_word(table, "http"));

  // The same process upgrades on the same connection: now it speaks WebSocket.
  w.sock.send_all("GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
  std::string up;
  while (up.find("\r\n\r\n") == std::string::npos) {
    std::string b = w.sock.recv_n(1, 10000);
    if (b.empty()) break;
    up += b;
  }
  REQUIRE(up.starts_with("HTTP/1.1 101"));
  REQUIRE(eventually([&] { return websocket_rows(c).size() == 1; }));
  CHECK(websocket_rows(c).at(0).at("pid") == row.at("pid"));
  CHECK(protocol_rows(c, "http").empty());

  w.send(opcode::close, std::string("\x03\xe8", 2));
  (void)w.expect_close();
  CHECK(eventually([&] { return websocket_rows(c).empty() && protocol_rows(c, "http").empty(); }));
}
