// One WebSocket connection of the gateway: the handler its process runs
// (docs/push-gateway.md). The process registers itself in the presence
// table when the 101 is out and in a room's pg group on `join`, and leaves
// both as soon as it stops taking frames (handler::closing), so a push that
// finds it was really handed to an open connection.
#include "connection.hpp"

#include <herd/actors.hpp>
#include <herd/tables/pg.hpp>

#include <algorithm>
#include <exception>
#include <utility>

namespace push_gateway {
namespace {

namespace ws = herd::ws;

// A connection may be in this many rooms: one that joins without end would
// grow its own state and the scope's without bound.
constexpr std::size_t max_rooms_per_connection = 1000;

}  // namespace

conn_handler::conn_handler(state& st, std::string user) : st_(st), user_(std::move(user)) {}

conn_handler::~conn_handler() {
  retire();
  st_.websockets.fetch_sub(1, std::memory_order_relaxed);
}

void conn_handler::enter() {
  if (registered_) return;
  self_ = herd::self();
  st_.presence.insert(user_, self_);
  registered_ = true;
  st_.connections.fetch_add(1, std::memory_order_relaxed);
}

void conn_handler::init(ws::session&, const herd::http::request&) { enter(); }

void conn_handler::handle(ws::session& s, const ws::event& e) {
  if (e.type == ws::event::kind::binary) return s.close(ws::close_code::unsupported, "binary frames are not accepted");
  if (e.type == ws::event::kind::text) command(s, e.payload);
}

void conn_handler::info(ws::session& s, const herd::any_message& m) {
  if (auto* f = m.get<frame_msg>()) s.text(*f->text);
}

void conn_handler::closing(ws::session&) { retire(); }

void conn_handler::terminate(const ws::ending&) { retire(); }

void conn_handler::command(ws::session& s, std::string_view line) {
  auto sp = line.find(' ');
  std::string_view verb = line.substr(0, sp);
  std::string_view arg = sp == std::string_view::npos ? std::string_view{} : line.substr(sp + 1);
  auto reply = [&](std::string_view a, std::string_view b) {
    std::string r;
    r.reserve(a.size() + b.size());
    r.append(a).append(b);
    s.text(r);
  };
  if (verb == "join" || verb == "leave") {
    if (!valid_name(arg)) return reply("error bad room name: 1-64 characters of [A-Za-z0-9_.-] after ", verb);
    std::string room(arg);
    auto at = std::find(rooms_.begin(), rooms_.end(), room);
    if (verb == "join") {
      if (at == rooms_.end()) {
        if (rooms_.size() >= max_rooms_per_connection) return reply("error too many rooms: at most 1000 per connection", "");
        // pg::join returns with the member listed: a push after the answer reaches it.
        herd::pg::join(rooms_scope, room, self_);
        rooms_.push_back(std::move(room));
      }
      return reply("ok join ", arg);
    }
    if (at != rooms_.end()) {
      (void)herd::pg::leave(rooms_scope, room, self_);
      rooms_.erase(at);
    }
    return reply("ok leave ", arg);
  }
  if (verb == "say") {
    auto sp2 = arg.find(' ');
    std::string_view room = arg.substr(0, sp2);
    if (sp2 == std::string_view::npos || !valid_name(room))
      return reply("error usage: say <room> <text>, the room 1-64 characters of [A-Za-z0-9_.-]", "");
    std::string frame;
    frame.reserve(line.size() + user_.size());
    frame.append(room).append(" ").append(user_).append(" ").append(arg.substr(sp2 + 1));
    (void)push_room(st_, room, frame);
    return;
  }
  if (line.empty()) return reply("error empty command (join, leave or say)", "");
  reply("error unknown command (join <room>, leave <room>, say <room> <text>): ",
        verb.substr(0, std::min<std::size_t>(verb.size(), 64)));
}

// Idempotent; from closing(), terminate() or the destructor (a process
// that ends by an exception still leaves). The table may be gone when the
// node stops before a connection does: nothing left to leave then.
void conn_handler::retire() noexcept {
  if (!registered_) return;
  registered_ = false;
  st_.connections.fetch_sub(1, std::memory_order_relaxed);
  try {
    st_.presence.erase_object(user_, self_);
    for (const auto& r : rooms_) (void)herd::pg::leave(rooms_scope, r, self_);
  } catch (const std::exception&) {
    // Only when the node is stopping: the root process, which owns the
    // table, has ended before this connection (past the drain's timeout).
  }
  rooms_.clear();
  rooms_.shrink_to_fit();
}

}  // namespace push_gateway
