// The sans-I/O frame parser: bytes from the peer in, events out. No socket,
// no process: the connection loop, the tests and the fuzz target drive it
// alike.
//
//   ws::frame_parser p({.max_message = 65536});
//   p.feed(bytes);
//   while (auto e = p.next()) switch (e->kind) { ... }
//
// It enforces RFC 6455 for a server (a client's parser is the same with
// require_mask = false): masking, reserved bits and opcodes, control frames
// <= 125 bytes and unfragmented, continuation rules, close codes, UTF-8 of
// text messages (streamed across fragments: the message is failed at the
// first bad byte, not when it ends) and of close reasons, and max_message.
// A violation yields one `fail` event with the close code to send (1002,
// 1007 or 1009); after a `fail` or a `close` the parser yields nothing more.
//
// Memory: an idle parser holds no buffer (two empty strings and a few bytes
// of state); what a message needed is given back once it has been handed out
// when it was larger than 4 KiB.
//
// Not thread-safe (one owner, like the connection it serves).
#pragma once
#include <herd/websocket/frame.hpp>
#include <herd/websocket/utf8.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace herd::ws {

struct parser_options {
  std::size_t max_message = 65536;  // payload bytes of one message, all fragments
  bool require_mask = true;         // a server's parser: unmasked frames are refused
};

struct event {
  enum class kind : uint8_t { text, binary, ping, pong, close, fail };
  kind type;
  // text/binary: the whole message (fragments joined); ping/pong: the
  // payload; close: the reason. Valid until the next call of next() or feed().
  std::string_view payload;
  // close: the peer's code (close_code::no_status when it sent none);
  // fail: the code to close with.
  uint16_t code = 0;
  // fail: what was wrong (for logs and tests).
  const char* why = "";
};

class frame_parser {
 public:
  explicit frame_parser(parser_options o = {}) noexcept : opt_(o) {}

  // Appends bytes from the peer. Cheap when the parser holds nothing: the
  // bytes are copied once.
  void feed(std::string_view bytes);
  // The next event, or nullopt when more bytes are needed (or after a fail
  // or close event).
  std::optional<event> next();
  // Bytes held: a partial frame and a partial message.
  std::size_t buffered() const noexcept { return in_.size() - pos_ + msg_.size(); }
  bool finished() const noexcept { return done_; }
  // Gives back buffers' capacity when nothing is held (before hibernating).
  void shrink() noexcept;

 private:
  parser_options opt_;
  std::string in_;    // bytes not yet parsed, from pos_
  std::string msg_;   // the fragments of the message being reassembled
  std::size_t pos_ = 0;
  utf8_validator utf8_;
  bool in_message_ = false;
  bool text_ = false;
  bool deliver_reset_ = false;  // msg_ was handed out: clear it on the next call
  bool done_ = false;
};

}  // namespace herd::ws
