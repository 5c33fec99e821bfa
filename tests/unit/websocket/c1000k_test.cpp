// The C1000K WebSocket run (tools/c1000k/ws_room.hpp) scaled down: every
// session is a real herd::ws connection over a memory transport (HTTP
// upgrade, then frames), joins one pg room, and must read the room's
// broadcasts exactly once each while a probe session outside the room reads
// every one of its pushes, in order. The client ends check what they read
// (the 101's accept key for their own key, every frame through the parser),
// which the second case shows on wrong input.
#include "ws_room_parts.hpp"

#include "support/node_fixture.hpp"

#include <herd/http/request.hpp>
#include <herd/websocket/connection.hpp>
#include <herd/websocket/handshake.hpp>

#include <catch2/catch.hpp>

using namespace std::chrono_literals;

TEST_CASE("ws c1000k: every WebSocket session over a memory transport reads each room broadcast once, and the probe outside the room reads every push in order", "[ws][c1000k]") {
  // 10,000 sessions; 1,000 at small scale (sanitizers: TSan holds at most
  // ~4,000 live fibers).
  const std::size_t n = herd::test::scaled(10000, 1000);
  c1000k::ws_room_config cfg;
  cfg.sessions = n;
  cfg.warmup = n / 10;
  cfg.shards = 8;
  cfg.idle_probes = 5;
  cfg.paced_chunk = 100;
  cfg.measure_memory = false;
  cfg.teardown = true;
  c1000k::ws_room_result r;
  const uint64_t opened_before = herd::ws::counters().opened;
  uint64_t opened_after = 0;
  herd::test::run_node_with(herd::test::opts(2), [&](herd::node& node) {
    r = c1000k::run_ws_room(node, cfg);
    opened_after = herd::ws::counters().opened;
  });
  INFO(r.error);
  CHECK(r.ok);
  CHECK(r.opened == n);
  CHECK(r.joined == n);
  CHECK(r.broadcast_sent == n);
  CHECK(r.broadcast_read == n);
  CHECK(r.paced_read == n);  // the second broadcast, 100 sends at a time: each end read it once, after the first
  CHECK(opened_after - opened_before == n + 1);  // every session and the probe went through ws::serve
  CHECK(r.probe_idle.count == cfg.idle_probes);
  CHECK(r.probe_during.count >= 1);  // the first push leaves with the broadcast
  CHECK(r.probe_paced.count >= 1);
  CHECK(r.probe_sent == r.probe_read);
  CHECK(r.probe_sent == cfg.idle_probes + r.probe_during.count + r.probe_paced.count);
  CHECK(r.probe_out_of_order == 0);
}

TEST_CASE("ws c1000k: a client end refuses a 101 made for another key, waits for a cut head and keeps a cut frame for the next read", "[ws][c1000k]") {
  using namespace c1000k::detail;
  auto answer_for = [](uint64_t idx) {
    herd::http::request q;
    q.method = "GET";
    q.target = q.path = "/ws";
    q.version_minor = 1;
    q.headers = {{"Host", "x"}, {"Upgrade", "websocket"}, {"Connection", "Upgrade"},
                 {"Sec-WebSocket-Key", key_for(idx)}, {"Sec-WebSocket-Version", "13"}};
    return herd::ws::accept_upgrade(q).response;
  };
  CHECK(key_for(7) != key_for(8));
  CHECK(key_for(7).size() == 24);  // 16 bytes in base64
  std::string good = answer_for(7);
  REQUIRE(good.starts_with("HTTP/1.1 101"));
  CHECK(check_101(good, 7).length == good.size());
  CHECK(check_101(good + "\x81\x01x", 7).length == good.size());
  CHECK(check_101(good.substr(0, good.size() - 1), 7).length == 0);
  CHECK(check_101(good.substr(0, good.size() - 1), 7).error.empty());
  CHECK(!check_101(answer_for(8), 7).error.empty());
  CHECK(!check_101("HTTP/1.1 400 Bad Request\r\n\r\n", 7).error.empty());

  std::string frames;
  herd::ws::write_frame(frames, herd::ws::opcode::text, "joined");
  std::size_t first = frames.size();
  herd::ws::write_frame(frames, herd::ws::opcode::text, std::string(300, 'r'));  // a 16-bit length
  CHECK(whole_frames(frames) == frames.size());
  for (std::size_t cut = first; cut < frames.size(); ++cut) CHECK(whole_frames(frames.substr(0, cut)) == first);
  CHECK(whole_frames(frames.substr(0, 1)) == 0);
}
