// herd::ws::session — one WebSocket connection's protocol state, without
// I/O: the parser for what the peer sends, the outbound queue of frames not
// yet written to the socket, and the close handshake. The connection loop
// (connection.hpp) moves bytes between it and a transport; a handler sees it
// as the object it sends commands through (text, binary, ping, close).
//
// The outbound queue is one string of frame bytes plus the end offset of
// each frame, so "queued" is exactly what the socket has not taken yet, in
// frames and bytes (the slow-consumer limit); an empty queue holds no
// buffer.
//
// Only the connection's own process may use it.
#pragma once
#include <herd/websocket/frame.hpp>
#include <herd/websocket/parser.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace herd::ws {

class session {
 public:
  enum class state : uint8_t {
    open,
    closing,  // a close frame was queued (ours or our answer to the peer's)
    closed,   // the close handshake is complete, or the connection failed
  };

  explicit session(parser_options o = {}, std::string protocol = {}) : parser_(o), protocol_(std::move(protocol)) {}

  // Commands (a handler's replies and pushes). Ignored once closing: a
  // message after our close frame would break the protocol.
  void text(std::string_view payload);
  void binary(std::string_view payload);
  void ping(std::string_view payload = {});
  // Queues a close frame with `code` and starts the close handshake.
  void close(uint16_t code, std::string_view reason = {});

  state status() const noexcept { return state_; }
  bool open() const noexcept { return state_ == state::open; }
  // The code of the close frame we sent (0 before), and the peer's (0
  // before; close_code::no_status for a close frame without one).
  uint16_t sent_code() const noexcept { return sent_code_; }
  uint16_t received_code() const noexcept { return received_code_; }
  const std::string& protocol() const noexcept { return protocol_; }

  // What the socket has not taken yet.
  std::size_t queued_frames() const noexcept { return ends_.size() - ends_head_; }
  std::size_t queued_bytes() const noexcept { return out_.size() - out_head_; }
  std::string_view pending() const noexcept { return {out_.data() + out_head_, out_.size() - out_head_}; }
  // The socket took the first n bytes of pending().
  void written(std::size_t n) noexcept;
  // Drops every queued frame the socket has not started to take (the one
  // partly written stays: cutting it would corrupt the stream) — for a slow
  // consumer, before its close frame is queued.
  void drop_unstarted() noexcept;

  // The loop's side: bytes from the peer, then the events they make. Pings
  // are answered (a pong is queued) and a close is answered here; the
  // events are still returned so a handler can see them. A `fail` queues
  // the close frame with its code.
  void feed(std::string_view bytes) { parser_.feed(bytes); }
  std::optional<event> next();
  // The peer closed TCP or it failed: nothing more will be written.
  void lost() noexcept { state_ = state::closed; }
  // Gives buffers back when nothing is held (before hibernating).
  void shrink() noexcept;
  // Bytes held in the parser and the queue (tests, the idle measurement).
  std::size_t buffered() const noexcept { return parser_.buffered() + queued_bytes(); }

 private:
  frame_parser parser_;
  std::string protocol_;
  std::string out_;
  std::size_t out_head_ = 0;
  std::vector<std::size_t> ends_;  // end offset in out_ of each queued frame
  std::size_t ends_head_ = 0;
  state state_ = state::open;
  uint16_t sent_code_ = 0;
  uint16_t received_code_ = 0;
};

}  // namespace herd::ws
