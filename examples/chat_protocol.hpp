// The chat server's line protocol apart from sockets and actors: framing
// (line_reader) and commands (parse). chat_server.cpp runs it per
// connection; tests/fuzz/chat_line_fuzz.cpp feeds it arbitrary bytes.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace chat {

inline constexpr std::size_t max_line = 64 * 1024;
inline constexpr std::size_t max_room_name = 64;

inline bool valid_room(std::string_view r) {
  return !r.empty() && r.size() <= max_room_name && r.find_first_of(" \t\r") == std::string_view::npos;
}

// Splits what arrives into lines. A partial line waits (at most max_line
// bytes of it); a line over max_line is refused once (on_too_long) and its
// remainder skipped up to its end.
class line_reader {
 public:
  // on_line(std::string_view) and on_too_long() return false to stop; feed
  // returns false when one of them did.
  template <class OnLine, class OnTooLong>
  bool feed(std::string_view bytes, OnLine&& on_line, OnTooLong&& on_too_long) {
    while (!bytes.empty()) {
      const std::size_t nl = bytes.find('\n');
      if (skipping_) {
        if (nl == std::string_view::npos) return true;
        skipping_ = false;
        bytes.remove_prefix(nl + 1);
        continue;
      }
      if (nl == std::string_view::npos) {
        pending_.append(bytes);
        if (pending_.size() <= max_line) return true;
        drop_pending();
        skipping_ = true;
        return on_too_long();
      }
      std::string_view line = bytes.substr(0, nl);
      if (!pending_.empty()) line = pending_.append(line);
      bytes.remove_prefix(nl + 1);
      const bool ok = line.size() > max_line ? on_too_long() : on_line(line);
      drop_pending();  // after on_line: line may point into it
      if (!ok) return false;
    }
    return true;
  }
  std::size_t pending() const noexcept { return pending_.size(); }
  // What the partial-line buffer holds on to: at most keep_capacity when
  // nothing is pending.
  std::size_t capacity() const noexcept { return pending_.capacity(); }
  static constexpr std::size_t keep_capacity = 1024;

 private:
  // A long line's buffer is given back once the line is over (a client that
  // sent one 64 KiB line would otherwise keep 64–128 KiB for good); a short
  // one is kept for the next partial line.
  void drop_pending() {
    if (pending_.capacity() > keep_capacity) std::string().swap(pending_);
    else pending_.clear();
  }

  std::string pending_;
  bool skipping_ = false;
};

struct command {
  enum kind_t { empty, join, leave, msg, bad } kind = empty;
  std::string_view room;   // join, leave, msg
  std::string_view text;   // msg: everything after the room (may be empty)
  std::string_view rest;   // msg: "room text", as it is broadcast
  const char* error = "";  // bad: the reason, for "ERROR <reason>\n"
};

// One line without its '\n' (a trailing '\r' is dropped). The views point
// into `line`.
inline command parse(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  command c;
  if (line.empty()) return c;
  const std::size_t sp = line.find(' ');
  const std::string_view cmd = line.substr(0, sp);
  const std::string_view rest = sp == std::string_view::npos ? std::string_view{} : line.substr(sp + 1);
  if (cmd == "JOIN") {
    c.kind = valid_room(rest) ? command::join : command::bad;
    c.room = rest;
    c.error = "bad room name";
  } else if (cmd == "LEAVE") {
    c.kind = command::leave;
    c.room = rest;
  } else if (cmd == "MSG") {
    const std::size_t sp2 = rest.find(' ');
    c.room = rest.substr(0, sp2);
    if (sp2 == std::string_view::npos || !valid_room(c.room)) {
      c.kind = command::bad;
      c.error = "usage: MSG room text";
    } else {
      c.kind = command::msg;
      c.text = rest.substr(sp2 + 1);
      c.rest = rest;
    }
  } else {
    c.kind = command::bad;
    c.error = "unknown command (JOIN room, MSG room text, LEAVE room)";
  }
  return c;
}

}  // namespace chat
