// chat_server: an IM push gateway in miniature. One actor per connection,
// one actor per room (chat_room.hpp); a line protocol:
//
//   JOIN room        -> OK JOIN room          (then every MSG to the room)
//   MSG room text    -> every member receives "MSG room text"
//   LEAVE room       -> OK LEAVE room
//   anything else    -> ERROR <why>           (the connection stays)
//
// A connection is in at most 1,000 rooms ("ERROR too many rooms ..."); a
// room ends when its last member leaves. Flow control (chat_room.hpp): a
// member more than 1 MiB behind a socket its peer does not read is cut off
// ("ERROR too far behind: disconnected", then a reset); a publisher has at
// most 64 publishes in flight and stops reading its socket until the rooms
// have fanned them out, so a flood slows its sender, not the server.
//
// With --first-data-timeout-ms, a client that sends nothing that long after
// connecting is closed (a handshake timeout: members that only listen send
// their JOIN first, so an honest one is never idle from the start).
// SIGTERM drains: each connection writes what its rooms already handed it
// and closes.
//
//   chat_server --port P [--bind ADDR] [--workers N] [--acceptors N] [--max-connections N|infinity]
//               [--first-data-timeout-ms MS]
#include "chat_protocol.hpp"
#include "chat_room.hpp"
#include "server_main.hpp"

#include <herd/actors.hpp>
#include <herd/net/tcp.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace {

namespace net = herd::net;
using namespace chat_msgs;
using namespace std::chrono_literals;

// Deliveries written in one send: fewer system calls when a burst queued up.
constexpr std::size_t batch_bytes = 64 * 1024;

class connection {
 public:
  explicit connection(net::tcp_socket& s) : s_(s), lag_(std::make_shared<member_lag>()) {}
  ~connection() {
    // Cut off: one last line, if the socket takes it. Then a reset: the
    // megabytes it left unread in the kernel are dropped now, not trickled
    // out to a peer that does not read.
    if (lag_->kicked.load(std::memory_order_relaxed)) {
      (void)s_.try_send("ERROR too far behind: disconnected\n");
      s_.abort();
    }
    lag_->gone.store(true, std::memory_order_seq_cst);
    chat::wake_waiter(*lag_);
    for (auto& [name, r] : rooms_) herd::cast(r.pid, leave_room{herd::self()});
  }

  // Runs until the peer goes away, the listener drains, or a room cuts the
  // connection off (an exit). first_data > 0: closes the connection if no
  // byte came that long after it was accepted (until then nothing else can
  // arrive: no room knows this process).
  void run(std::chrono::milliseconds first_data) {
    if (!s_.set_active(net::active::once())) return;
    std::chrono::milliseconds wait = first_data.count() > 0 ? first_data : herd::infinity;
    for (bool more = true; more;) {
      more = herd::receive(
          [&](net::tcp_data& d) {
            wait = herd::infinity;
            return on_data(d.data.view()) && read_more();
          },
          [&](const deliver& m) { return write_deliveries(m); },
          [&](const published& p) { return on_published(p.room); },
          [&](const herd::down& d) { return on_down(d); },
          [&](const net::listener_draining&) { return drain(); },
          [](const net::tcp_closed&) { return false; },
          [](const net::tcp_error&) { return false; },
          herd::after(wait, [] { return false; }));
    }
  }

 private:
  struct joined {
    herd::pid pid;
    herd::monitor_ref mon;
  };
  struct in_flight {  // publishes to one room not yet acknowledged
    std::size_t count = 0;
    herd::monitor_ref mon;  // a room that ends acknowledges nothing more
  };

  // Re-arms the socket unless too many publishes are in flight; then the
  // acknowledgements re-arm it (on_published).
  bool read_more() {
    if (unacked_ >= chat::publish_window) {
      paused_ = true;
      return true;
    }
    return bool(s_.set_active(net::active::once()));
  }
  bool resume_reading() {
    if (!paused_ || unacked_ > chat::publish_window / 2) return true;
    paused_ = false;
    return bool(s_.set_active(net::active::once()));
  }
  bool on_published(herd::pid room) {
    auto it = unacked_by_room_.find(room);
    if (it == unacked_by_room_.end()) return true;
    --unacked_;
    if (--it->second.count == 0) {
      herd::demonitor(it->second.mon);
      unacked_by_room_.erase(it);
    }
    return resume_reading();
  }

  // Writes this delivery and every one already queued behind it (up to
  // batch_bytes) in one send.
  bool write_deliveries(const deliver& first) {
    std::string batch;
    while (batch.size() < batch_bytes &&
           herd::receive(
               [&](const deliver& m) {
                 if (batch.empty()) batch = *first.line;
                 batch.append(*m.line);
                 return true;
               },
               herd::after(0ms, [] { return false; }))) {
    }
    const std::string_view out = batch.empty() ? std::string_view(*first.line) : std::string_view(batch);
    const bool ok = write(out);
    const uint64_t left = lag_->bytes.fetch_sub(out.size(), std::memory_order_seq_cst) - out.size();
    if (left <= chat::max_bytes_behind / 2) chat::wake_waiter(*lag_);
    return ok;
  }

  // Every write to the socket. What the socket does not take at once means
  // the peer is not keeping up: the rooms may judge it while it waits.
  bool write(std::string_view text) {
    auto n = s_.try_send(text);
    if (!n) return false;
    if (*n == text.size()) return true;
    lag_->blocked.store(true, std::memory_order_seq_cst);
    chat::wake_waiter(*lag_);
    const bool ok = bool(s_.send(text.substr(*n)));
    lag_->blocked.store(false, std::memory_order_seq_cst);
    return ok;
  }

  // The listener is draining: write what the rooms already handed over,
  // then end (the socket closes gracefully: written bytes still arrive).
  bool drain() {
    while (herd::receive([&](const deliver& m) { return write_deliveries(m); },
                         herd::after(0ms, [] { return false; }))) {
    }
    return false;
  }

  bool on_data(std::string_view bytes) {
    return reader_.feed(
        bytes, [&](std::string_view line) { return on_line(line); },
        [&] { return reply("ERROR line too long (over 65536 bytes)\n"); });
  }

  bool reply(std::string_view text) { return write(text); }

  bool on_line(std::string_view line) {
    const chat::command c = chat::parse(line);
    switch (c.kind) {
      case chat::command::empty: return true;
      case chat::command::join: return join(c.room);
      case chat::command::leave: return leave(c.room);
      case chat::command::msg: return msg(c.room, c.rest);
      case chat::command::bad: break;
    }
    return reply("ERROR " + std::string(c.error) + "\n");
  }

  bool join(std::string_view name) {
    const std::string n(name);
    if (rooms_.count(n)) return reply("OK JOIN " + n + "\n");
    if (rooms_.size() >= chat::max_rooms_per_connection)
      return reply("ERROR too many rooms: at most " + std::to_string(chat::max_rooms_per_connection) +
                   " per connection (LEAVE one first)\n");
    std::string why = enter(n);
    return reply(why.empty() ? "OK JOIN " + n + "\n" : "ERROR cannot join " + n + ": " + why + "\n");
  }

  // Joins the room, starting it if it does not exist. A room ends when it
  // empties, so the one found may end before the join reaches it, and two
  // first joiners may race to start it: either way, look again. "" or why not.
  std::string enter(const std::string& name) {
    const std::string key = chat::room_key(name);
    std::string why = "the room kept ending";
    for (int attempt = 0; attempt < 5; ++attempt) {
      if (auto r = herd::whereis(key)) {
        herd::monitor_ref mon = herd::monitor(*r);
        try {
          herd::call<herd::ok>(*r, join_room{herd::self(), lag_}, 5s);
          rooms_.emplace(name, joined{*r, mon});
          return "";
        } catch (const herd::call_error& e) {
          herd::demonitor(mon);
          why = e.what();
          if (herd::whereis(key) == r) return why;  // alive but not answering
          continue;
        }
      }
      if (chat::live_rooms.load(std::memory_order_relaxed) >= chat::max_rooms)
        return "too many rooms on this server (" + std::to_string(chat::max_rooms) + ")";
      try {
        herd::pid r = herd::start_server<chat::room>(herd::spawn_options{.name = key}, name,
                                                     join_room{herd::self(), lag_}).id;
        rooms_.emplace(name, joined{r, herd::monitor(r)});
        return "";
      } catch (const herd::spawn_error& e) {
        why = e.what();  // the name was taken meanwhile (look again), or no process left
      }
    }
    return why;
  }

  bool leave(std::string_view name) {
    auto it = rooms_.find(std::string(name));
    if (it == rooms_.end()) return reply("ERROR not in room " + std::string(name) + "\n");
    herd::cast(it->second.pid, leave_room{herd::self()});
    herd::demonitor(it->second.mon);
    rooms_.erase(it);
    return reply("OK LEAVE " + std::string(name) + "\n");
  }

  bool msg(std::string_view name, std::string_view rest) {
    herd::pid r;
    if (auto it = rooms_.find(std::string(name)); it != rooms_.end()) r = it->second.pid;
    else if (auto p = herd::whereis(chat::room_key(name))) r = *p;
    else return reply("ERROR no such room " + std::string(name) + "\n");
    auto line = std::make_shared<std::string>();
    line->reserve(rest.size() + 5);
    line->append("MSG ").append(rest).push_back('\n');
    herd::cast(r, publish{std::move(line), herd::self()});
    in_flight& f = unacked_by_room_[r];
    if (f.count++ == 0) f.mon = herd::monitor(r);
    ++unacked_;
    return true;
  }

  bool on_down(const herd::down& d) {
    if (auto it = unacked_by_room_.find(d.who); it != unacked_by_room_.end() && it->second.mon == d.ref) {
      unacked_ -= it->second.count;
      unacked_by_room_.erase(it);
      if (!resume_reading()) return false;
    }
    for (auto it = rooms_.begin(); it != rooms_.end(); ++it) {
      if (it->second.mon == d.ref) {
        std::string name = it->first;
        rooms_.erase(it);
        return reply("ERROR room " + name + " closed\n");
      }
    }
    return true;
  }

  net::tcp_socket& s_;
  std::shared_ptr<member_lag> lag_;
  std::unordered_map<std::string, joined> rooms_;
  std::unordered_map<herd::pid, in_flight> unacked_by_room_;
  std::size_t unacked_ = 0;
  bool paused_ = false;  // the socket is not armed: waiting for acknowledgements
  chat::line_reader reader_;
};

std::chrono::milliseconds g_first_data{0};  // 0: wait for a first line forever

void serve_member(net::tcp_socket s) { connection(s).run(g_first_data); }

}  // namespace

int main(int argc, char** argv) {
  // Members do not hibernate: a chat connection holds its rooms and a
  // partial line, and is rarely idle for long.
  example::server_options o = example::parse_server_options("chat_server", argc, argv, {"--idle-hibernate-ms"});
  g_first_data = o.first_data_timeout;
  return example::server_main("chat_server", o, serve_member);
}
