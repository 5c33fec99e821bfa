// push_gateway's shared state and its two halves: the HTTP routes (push,
// stats, health, the upgrade) and the WebSocket handler that one
// connection process runs. docs/push-gateway.md says who owns what.
//
// No process sits on the push path: the HTTP connection that took a push
// looks the receivers up (presence table, pg group) and sends each
// connection process its frame with herd::send; each connection writes its
// own socket.
#pragma once
#include <herd/http/router.hpp>
#include <herd/tables/table.hpp>
#include <herd/websocket/connection.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace push_gateway {

struct config {
  std::chrono::milliseconds ping_interval{25000};
  std::size_t max_message_bytes = 65536;
  std::size_t max_websockets = SIZE_MAX;  // --max-connections: upgrades past it get 503
  std::chrono::milliseconds idle_hibernate{1000};
};

// The pg scope the rooms live in (a group per room).
inline constexpr std::string_view rooms_scope = "push_gateway";

// What a connection process is sent: one text frame, shared by every
// receiver of the same push (a room of 10,000 holds one copy).
struct frame_msg {
  std::shared_ptr<const std::string> text;
};

struct state {
  config cfg;
  // user -> a connection process, one object per device (a bag). Public:
  // every connection adds and removes itself; owned by the root process.
  herd::table<std::string, herd::pid> presence;
  std::shared_ptr<const herd::ws::options> ws_opts;
  std::atomic<std::size_t> websockets{0};  // upgraded and not yet ended (the --max-connections count)
  std::atomic<std::size_t> connections{0};  // registered: open for pushes
  std::atomic<uint64_t> pushed{0};          // push and say frames handed to connections
};

// 1-64 characters of [A-Za-z0-9_.-]: user ids and room names.
bool valid_name(std::string_view s) noexcept;

// Hands `text` to every connection of `user` / member of `room`; how many.
// From any process (the HTTP connection's, or a WebSocket's for `say`).
std::size_t push_user(state& st, const std::string& user, std::string_view text);
std::size_t push_room(state& st, std::string_view room, std::string_view text);

// The /stats body.
std::string stats_json(const state& st);

// The routes, sharing `st` (which outlives the listener).
herd::http::router make_router(state& st);

// In the root process, before the listener starts: the presence table and
// the shared WebSocket options. False (and a line on stderr) when the table
// cannot be made.
bool start(state& st);

}  // namespace push_gateway
