#include <herd/websocket/session.hpp>

namespace herd::ws {
namespace {

// Free helpers over the queue rather than private member functions: a
// member declared in the public header would be a symbol every module host
// has to export, and no module could call it.

// Appends one frame to the outbound queue.
void push(std::string& out, std::vector<std::size_t>& ends, opcode op, std::string_view payload) {
  write_frame(out, op, payload);
  ends.push_back(out.size());
}

// Appends our close frame; returns the code it carries.
uint16_t queue_close(std::string& out, std::vector<std::size_t>& ends, uint16_t code, std::string_view reason) {
  if (code == close_code::no_status) {
    write_frame(out, opcode::close, {});  // echo "no code" as no code (RFC 6455 5.5.1)
  } else {
    write_close(out, code, reason);
  }
  ends.push_back(out.size());
  return code;
}

}  // namespace

void session::text(std::string_view payload) {
  if (state_ == state::open) push(out_, ends_, opcode::text, payload);
}

void session::binary(std::string_view payload) {
  if (state_ == state::open) push(out_, ends_, opcode::binary, payload);
}

void session::ping(std::string_view payload) {
  if (state_ == state::open) push(out_, ends_, opcode::ping, payload.substr(0, 125));
}

void session::close(uint16_t code, std::string_view reason) {
  if (state_ != state::open) return;
  sent_code_ = queue_close(out_, ends_, code, reason);
  state_ = state::closing;
}

void session::written(std::size_t n) noexcept {
  out_head_ += n;
  while (ends_head_ < ends_.size() && ends_[ends_head_] <= out_head_) ++ends_head_;
  if (out_head_ == out_.size()) {
    out_.clear();
    out_head_ = 0;
    ends_.clear();
    ends_head_ = 0;
    if (out_.capacity() > 4096) std::string().swap(out_);
  }
}

void session::drop_unstarted() noexcept {
  if (ends_head_ == ends_.size()) return;
  std::size_t frame_start = ends_head_ == 0 ? 0 : ends_[ends_head_ - 1];
  std::size_t keep = out_head_ > frame_start ? ends_[ends_head_] : out_head_;
  out_.resize(keep);
  ends_.resize(out_head_ > frame_start ? ends_head_ + 1 : ends_head_);
  if (out_head_ == out_.size()) written(0);
}

void session::shrink() noexcept {
  parser_.shrink();
  if (out_.empty()) std::string().swap(out_);
  if (ends_.empty()) std::vector<std::size_t>().swap(ends_);
}

std::optional<event> session::next() {
  if (state_ == state::closed) return std::nullopt;
  auto e = parser_.next();
  if (!e) return e;
  switch (e->type) {
    case event::kind::ping:
      if (state_ == state::open) push(out_, ends_, opcode::pong, e->payload);
      break;
    case event::kind::close:
      received_code_ = e->code;
      if (state_ == state::open) sent_code_ = queue_close(out_, ends_, e->code, {});
      state_ = state::closed;  // ours was sent, or is queued now: the handshake is complete
      break;
    case event::kind::fail:
      if (state_ == state::open) sent_code_ = queue_close(out_, ends_, e->code, e->why);
      state_ = state::closed;
      break;
    default:
      break;
  }
  return e;
}

}  // namespace herd::ws
