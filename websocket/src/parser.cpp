// Frame parsing works on whole frames: a frame's header says its length,
// which is checked against max_message before any of its payload is
// buffered, so a peer cannot make the parser hold more than max_message +
// one frame header of its bytes. Control frame payloads are unmasked in
// place and handed out as views into the input buffer; data frames are
// unmasked into the message buffer, and text is validated as each fragment
// arrives.
#include <herd/websocket/parser.hpp>

namespace herd::ws {
namespace {

constexpr std::size_t keep_capacity = 4096;

void release_if_large(std::string& s) {
  if (s.empty() && s.capacity() > keep_capacity) std::string().swap(s);
}

bool is_control(uint8_t op) noexcept { return op & 0x8; }

// Helpers over the parser's members rather than private member functions:
// a member declared in the public header would be a symbol every module
// host has to export, and no module could call it.

// The message handed out last is no longer referenced: drop it.
void forget_delivered(std::string& msg, bool& deliver_reset) noexcept {
  if (!deliver_reset) return;
  msg.clear();
  release_if_large(msg);
  deliver_reset = false;
}

// Moves the unparsed bytes to the front of the input buffer.
void compact(std::string& in, std::size_t& pos, std::string& msg, bool& deliver_reset) noexcept {
  forget_delivered(msg, deliver_reset);
  if (pos == 0) return;
  in.erase(0, pos);
  pos = 0;
  release_if_large(in);
}

// A protocol violation: the one `fail` event, after which the parser is done.
std::optional<event> fail_with(bool& done, uint16_t code, const char* why) noexcept {
  done = true;
  return event{event::kind::fail, {}, code, why};
}

}  // namespace

void frame_parser::feed(std::string_view bytes) {
  if (done_ || bytes.empty()) return;
  compact(in_, pos_, msg_, deliver_reset_);
  in_.append(bytes);
}

void frame_parser::shrink() noexcept {
  compact(in_, pos_, msg_, deliver_reset_);
  if (in_.empty()) std::string().swap(in_);
  if (msg_.empty()) std::string().swap(msg_);
}

std::optional<event> frame_parser::next() {
  forget_delivered(msg_, deliver_reset_);
  auto fail = [this](uint16_t code, const char* why) { return fail_with(done_, code, why); };
  for (;;) {
    if (done_) return std::nullopt;
    std::string_view b(in_.data() + pos_, in_.size() - pos_);
    if (b.size() < 2) return std::nullopt;
    auto b0 = uint8_t(b[0]), b1 = uint8_t(b[1]);
    bool fin = b0 & 0x80;
    uint8_t op = b0 & 0x0F;
    if (b0 & 0x70) return fail(close_code::protocol_error, "reserved bits set (no extension was negotiated)");
    if (op > 2 && op != 8 && op != 9 && op != 10) return fail(close_code::protocol_error, "reserved opcode");
    bool masked = b1 & 0x80;
    if (opt_.require_mask && !masked) return fail(close_code::protocol_error, "unmasked client frame");
    if (!opt_.require_mask && masked) return fail(close_code::protocol_error, "masked server frame");
    uint64_t len = b1 & 0x7F;
    std::size_t head = 2;
    if (len == 126) {
      if (b.size() < 4) return std::nullopt;
      len = uint64_t(uint8_t(b[2])) << 8 | uint8_t(b[3]);
      head = 4;
    } else if (len == 127) {
      if (b.size() < 10) return std::nullopt;
      len = 0;
      for (int i = 0; i < 8; ++i) len = len << 8 | uint8_t(b[2 + i]);
      if (len >> 63) return fail(close_code::protocol_error, "64-bit length with its top bit set");
      head = 10;
    }
    if (is_control(op)) {
      if (!fin) return fail(close_code::protocol_error, "fragmented control frame");
      if (len > 125) return fail(close_code::protocol_error, "control frame over 125 bytes");
    } else {
      if (op == 0 && !in_message_) return fail(close_code::protocol_error, "continuation without a message");
      if (op != 0 && in_message_) return fail(close_code::protocol_error, "new message inside a fragmented one");
      if (len > opt_.max_message || msg_.size() + len > opt_.max_message)
        return fail(close_code::too_big, "message over max_message");
    }
    if (masked) head += 4;
    if (b.size() < head + len) return std::nullopt;  // wait for the whole frame
    const uint8_t* key = masked ? reinterpret_cast<const uint8_t*>(b.data() + head - 4) : nullptr;
    char* payload = in_.data() + pos_ + head;
    auto n = std::size_t(len);
    if (key)
      for (std::size_t i = 0; i < n; ++i) payload[i] = char(uint8_t(payload[i]) ^ key[i & 3]);
    pos_ += head + n;
    std::string_view p(payload, n);

    if (is_control(op)) {
      if (op == 9) return event{event::kind::ping, p};
      if (op == 10) return event{event::kind::pong, p};
      done_ = true;  // close: nothing after it counts
      if (n == 0) return event{event::kind::close, {}, close_code::no_status};
      if (n == 1) return fail(close_code::protocol_error, "close frame with a 1-byte payload");
      auto code = uint16_t(uint8_t(p[0]) << 8 | uint8_t(p[1]));
      if (!valid_close_code(code)) return fail(close_code::protocol_error, "invalid close code");
      if (!valid_utf8(p.substr(2))) return fail(close_code::invalid_payload, "close reason is not UTF-8");
      return event{event::kind::close, p.substr(2), code};
    }
    if (op != 0) {
      in_message_ = true;
      text_ = op == 1;
      utf8_.reset();
    }
    if (text_ && !utf8_.feed(p)) return fail(close_code::invalid_payload, "text is not UTF-8");
    if (!fin) {
      msg_.append(p);
      continue;
    }
    in_message_ = false;
    if (text_ && !utf8_.complete()) return fail(close_code::invalid_payload, "text ends inside a UTF-8 sequence");
    auto kind = text_ ? event::kind::text : event::kind::binary;
    if (msg_.empty()) return event{kind, p};  // unfragmented: a view into the input, no copy
    msg_.append(p);
    deliver_reset_ = true;
    return event{kind, msg_};
  }
}

}  // namespace herd::ws
