// The pieces of the C1000K WebSocket simulation (ws_room.hpp): the server
// side (ws_room_server.cpp), the simulated clients (ws_room_clients.cpp,
// ws_room_probe.cpp) and the messages between them and the driver
// (ws_room.cpp). Private to tools/c1000k and its test.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <herd/actors/pid.hpp>
#include <herd/net/memory_transport.hpp>
#include <herd/websocket/frame.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ws_room.hpp"

namespace c1000k::detail {

using clock = std::chrono::steady_clock;

inline constexpr std::string_view pg_scope = "c1000k";
inline constexpr std::string_view room_name = "room";

// ---- to the session processes (server side) ----
// The broadcast: one payload shared by every member's copy of the message.
struct room_push {
  std::shared_ptr<const std::string> text;
};
// The probe's single-user push: the session writes "probe <phase> <seq> <ns>".
struct probe_push {
  int phase;
  uint64_t seq;
  int64_t sent_ns;  // steady_clock, when the pusher sent it
};

// Builds the router (one upgrade route, /ws, to a room handler) and the ws
// options every session shares. Lives as long as any session: the handler
// each memory_connect copies holds only a pointer to it.
struct server;
std::shared_ptr<server> make_server(const ws_room_config& cfg);
herd::net::memory_handler session_handler(const server& s);

// ---- the simulated clients ----
// A session's Sec-WebSocket-Key (from its index: no key is stored), its
// upgrade request, and whether `bytes` start with the right 101 head:
// the head's length, 0 while it is incomplete, or an error.
std::string key_for(uint64_t idx);
std::string upgrade_request(uint64_t idx);
struct head_check {
  std::size_t length = 0;  // 0: need more bytes
  std::string error;       // not empty: the answer is wrong
};
head_check check_101(std::string_view bytes, uint64_t idx);
// The length of the whole frames at the start of `bytes` (a frame cut by a
// read stays for the next one).
std::size_t whole_frames(std::string_view bytes);
// A client's masked frame.
std::string client_frame(herd::ws::opcode op, std::string_view payload, uint32_t mask);

// Commands from the driver to a shard, and its reports.
struct shard_open {
  std::size_t target;  // client ends this shard holds once done (cumulative)
};
struct shard_join {};
// Broadcast `round` (1, 2, ...) comes with `text`: each client end must read
// it once, after the rounds before.
struct shard_expect_room {
  int round;
  std::shared_ptr<const std::string> text;
};
struct shard_stop {};
struct shard_report {
  enum kind_t : uint8_t { opened, joined, room_done, stopped, failed } kind;
  unsigned shard;
  std::size_t count = 0;
  clock::time_point at{};
  std::vector<herd::pid> sample{};  // opened: some session processes (the runtime's accounting)
  std::string error{};
};

struct shard_config {
  unsigned index;
  uint64_t first_idx;    // global index of this shard's first session (its key)
  std::size_t capacity;  // sessions this shard will hold
  std::size_t window;
  std::chrono::seconds stall;
  herd::net::memory_handler server;
  herd::pid driver;
};
void run_shard(shard_config c);
// Bytes of bookkeeping a shard keeps per client end.
std::size_t shard_bytes_per_client();

// The probe: one session outside the room, pushed to every `every`.
struct probe_run {
  int phase;
  std::size_t stop_after;  // 0: until probe_stop
};
struct probe_stop {
  bool end;  // false: report the phase and wait for the next
};
struct probe_report {
  int phase;  // -1: ready (session open)
  latency lat{};
  std::size_t sent = 0, read = 0, out_of_order = 0;
  std::string error{};
};
struct probe_config {
  uint64_t idx;
  std::chrono::milliseconds every;
  std::chrono::seconds stall;
  herd::net::memory_handler server;
  herd::pid driver;
};
void run_probe(probe_config c);

latency summarize(std::vector<double>& us);

}  // namespace c1000k::detail
