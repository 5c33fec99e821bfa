// The observer shows a WebSocket connection's protocol and outbound queue
// (introspect::set_protocol / set_out_queue), in the `processes` and
// `process` replies and in herd-observer's table, against a live node: a
// client that sends large messages and reads none of the echoes makes the
// queue grow; once it reads them all, the queue shows empty.
#include "../../observer/observer_fixture.hpp"
#include "support/ws_client.hpp"
#include "support/ws_server.hpp"

#include <cstdio>

using namespace observer_test;
using herd::ws::opcode;

namespace {

std::atomic<uint16_t> echo_port{0};

// The rows of connection processes that say they speak WebSocket.
std::vector<json> websocket_rows(client& c) {
  json r = c.ask(req("processes", {{"kind", "connection"}, {"limit", 1000}}));
  std::vector<json> out;
  for (auto& p : r.at("result").at("processes"))
    if (p.at("protocol").is_string() && p.at("protocol") == "websocket") out.push_back(p);
  return out;
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
