// herd::ws — a WebSocket connection as one herd process, Erlang style
// (cowboy_websocket on Ranch): the process that served the HTTP upgrade
// becomes the WebSocket connection, and its handler receives frames and
// ordinary herd messages in the same receive, so another process pushes
// to a connection with herd::send(pid, value).
//
//   struct echo final : herd::ws::handler {
//     void handle(herd::ws::session& s, const herd::ws::event& e) override {
//       if (e.type == herd::ws::event::kind::text) s.text(e.payload);
//     }
//     void info(herd::ws::session& s, const herd::any_message& m) override {
//       if (auto* p = m.get<std::string>()) s.text(*p);     // a push
//     }
//   };
//   // in the connection's process, after reading an upgrade request:
//   herd::ws::serve(std::move(sock), req, rest, std::make_unique<echo>(), opts);
//
// The loop (connection_loop.hpp):
// - input is {active, once}: one read at a time, parsed, handed to the
//   handler; the socket is re-armed only after that, so a fast client is
//   slowed down by TCP, not buffered by the server;
// - output goes to the session's queue and is written with the transport's
//   non-blocking try_send; what the socket refuses stays queued and is
//   written when the socket reports room (tcp_socket::notify_writable: a
//   tcp_writable message, no timer) while the process keeps receiving — a
//   stalled connection may hibernate with its queue. More
//   than max_queued_frames or max_queued_bytes not yet written: the peer is
//   a slow consumer (counted in counters()) — the frames it has not started
//   to take are dropped, a close frame 1008 follows the one in progress, and
//   after close_timeout the socket is aborted (its kernel backlog goes too);
// - a ping every ping_interval; nothing from the peer for two intervals:
//   close with timeout_code;
// - listener_draining: close with 1001;
// - idle for idle_hibernate with nothing queued: the process hibernates
//   (its stack goes back to the pool; the session's buffers are freed).
// - once the close handshake is complete (both close frames) the server
//   closes TCP; after our close alone (a protocol error, a timeout, drain)
//   TCP is half-closed once the queue is written and the peer's close or
//   EOF is awaited (up to close_timeout), so our close frame is not lost to
//   a reset caused by the peer's unread bytes.
#pragma once
#include <herd/actors/receive.hpp>
#include <herd/http/request.hpp>
#include <herd/websocket/handshake.hpp>
#include <herd/websocket/session.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace herd::ws {

struct options {
  parser_options parser{};         // max_message (65,536), masking
  handshake_options handshake{};   // subprotocols
  std::chrono::milliseconds ping_interval = std::chrono::seconds(25);  // herd::infinity: no pings
  uint16_t timeout_code = close_code::going_away;  // the gateway uses 4000
  std::size_t max_queued_frames = 1000;
  std::size_t max_queued_bytes = std::size_t(1) << 20;
  std::chrono::milliseconds idle_hibernate = herd::infinity;
  std::chrono::milliseconds close_timeout = std::chrono::seconds(5);
};

// How the connection ended, for terminate().
struct ending {
  uint16_t sent = 0;      // the close code we sent (0: none)
  uint16_t received = 0;  // the peer's (0: no close frame; close_code::no_status: one without a code)
  bool slow_consumer = false;
  bool tcp_lost = false;  // TCP closed or failed before the close handshake completed
};

// A WebSocket behaviour (cowboy_websocket's callbacks). Commands go through
// the session: s.text(...), s.binary(...), s.ping(), s.close(code).
// Called in the connection's process; an exception ends the process with it.
class handler {
 public:
  virtual ~handler() = default;
  // After the 101 went out, before any frame (websocket_init). Copy from the
  // request what you need: it is not kept (idle connections stay small).
  virtual void init(session& s, const http::request& r) {
    (void)s;
    (void)r;
  }
  // A text or binary message (whole), or a ping / pong / close seen from the
  // peer (herd already answered pings and the close) — websocket_handle.
  virtual void handle(session& s, const event& e) = 0;
  // Any other message in the process's mailbox — websocket_info.
  virtual void info(session& s, const herd::any_message& m) {
    (void)s;
    (void)m;
  }
  // Once, when the connection stops taking frames: our close frame is queued
  // (slow consumer, timeout, drain, protocol error) or the peer's close was
  // answered. It may linger up to close_timeout before terminate(); a handler
  // that others find (a registry of connections) leaves it here, so nothing
  // more is counted as handed to this connection.
  virtual void closing(session& s) { (void)s; }
  // The connection is over (websocket terminate).
  virtual void terminate(const ending& how) { (void)how; }
};

// Process-wide counts. Any thread (relaxed atomics).
struct counters_view {
  uint64_t opened = 0;
  uint64_t slow_consumers = 0;  // closed with 1008 for the queue limit
  uint64_t timeouts = 0;        // closed with timeout_code
};
counters_view counters() noexcept;

namespace detail {
void count_opened() noexcept;
void count_slow_consumer() noexcept;
void count_timeout() noexcept;
}  // namespace detail

}  // namespace herd::ws
