// chat_server: an IM push gateway in miniature. One actor per connection,
// one actor per room; a line protocol:
//
//   JOIN room        -> OK JOIN room          (then every MSG to the room)
//   MSG room text    -> every member receives "MSG room text"
//   LEAVE room       -> OK LEAVE room
//   anything else    -> ERROR <why>           (the connection stays)
//
// A room never blocks on a member: it only sends messages. Each connection
// shares a `backlog` counter with its rooms — lines and bytes handed to it and
// not yet written to its socket. A member more than 1,000 lines or 1 MiB
// behind is dropped by the room, told so in an error line (best effort: its
// socket is full) and disconnected with a reset (its unread backlog is
// dropped at once); the room and everyone else go on.
//
// With --first-data-timeout-ms, a client that sends nothing that long after
// connecting is closed (a handshake timeout: members that only listen send
// their JOIN first, so an honest one is never idle from the start).
//
//   chat_server --port P [--bind ADDR] [--workers N] [--acceptors N] [--max-connections N|infinity]
//               [--first-data-timeout-ms MS]
#include "chat_protocol.hpp"
#include "server_main.hpp"

#include <herd/actors.hpp>
#include <herd/net/tcp.hpp>

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace chat_msgs {
struct backlog {
  // Relaxed: counters compared against limits, not used to publish data.
  std::atomic<uint64_t> lines{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<bool> kicked{false};
};
struct join_room {
  herd::pid member;
  std::shared_ptr<backlog> lag;
};
struct leave_room {
  herd::pid member;
};
struct publish {
  std::shared_ptr<const std::string> line;  // "MSG room text\n", shared by every delivery
};
struct deliver {
  std::shared_ptr<const std::string> line;
};
}  // namespace chat_msgs

namespace {

namespace net = herd::net;
using namespace chat_msgs;
using namespace std::chrono_literals;

constexpr uint64_t max_lines_behind = 1000;
constexpr uint64_t max_bytes_behind = 1 << 20;

struct room : herd::server<room> {
  using calls = herd::types<join_room>;
  using casts = herd::types<leave_room, publish>;
  using infos = herd::types<herd::down>;

  struct member {
    std::shared_ptr<backlog> lag;
    herd::monitor_ref mon;
  };

  explicit room(std::string n) : name(std::move(n)) {}

  herd::ok handle_call(join_room j, const herd::from&) {
    if (!members.count(j.member)) members.emplace(j.member, member{std::move(j.lag), herd::monitor(j.member)});
    return {};
  }
  void handle_cast(const leave_room& l) {
    if (auto it = members.find(l.member); it != members.end()) {
      herd::demonitor(it->second.mon);
      members.erase(it);
    }
  }
  void handle_cast(const publish& p) {
    const uint64_t size = p.line->size();
    for (auto it = members.begin(); it != members.end();) {
      backlog& b = *it->second.lag;
      uint64_t lines = b.lines.fetch_add(1, std::memory_order_relaxed) + 1;
      uint64_t bytes = b.bytes.fetch_add(size, std::memory_order_relaxed) + size;
      if (lines > max_lines_behind || bytes > max_bytes_behind) {
        // Too slow: never wait for it. It unwinds at its next blocking point
        // (a send parked on its full socket is one) and says why on the way out.
        b.kicked.store(true, std::memory_order_relaxed);
        herd::exit(it->first, herd::exit_reason::shutdown("too far behind in room " + name));
        herd::demonitor(it->second.mon);
        it = members.erase(it);
        continue;
      }
      herd::send(it->first, deliver{p.line});
      ++it;
    }
  }
  void handle_info(const herd::down& d) { members.erase(d.who); }

  std::string name;
  std::unordered_map<herd::pid, member> members;
};

std::string room_key(std::string_view name) { return "chat.room." + std::string(name); }

// The room's pid, starting it if it does not exist yet. Two first joiners
// may race: the loser's start fails on the registered name and it looks up
// the winner's.
herd::pid find_or_start_room(std::string_view name) {
  std::string key = room_key(name);
  if (auto p = herd::whereis(key)) return *p;
  try {
    return herd::start_server<room>(herd::spawn_options{.name = key}, std::string(name));
  } catch (const herd::spawn_error&) {
    if (auto p = herd::whereis(key)) return *p;
    throw;
  }
}

class connection {
 public:
  explicit connection(net::tcp_socket& s) : s_(s), lag_(std::make_shared<backlog>()) {}
  ~connection() {
    // Kicked: one last line, without waiting (the socket is probably full).
    // Then a reset: the megabytes it left unread in the kernel are dropped
    // now, not trickled out to a peer that does not read.
    if (lag_->kicked.load(std::memory_order_relaxed)) {
      (void)s_.send("ERROR too far behind: disconnected\n", std::chrono::milliseconds(0));
      s_.abort();
    }
    for (auto& [name, r] : rooms_) herd::cast(r.pid, leave_room{herd::self()});
  }

  // Runs until the peer goes away (or the connection is kicked: an exit).
  // first_data > 0: closes the connection if no byte came that long after
  // it was accepted (until then nothing else can arrive: no room knows this
  // process).
  void run(std::chrono::milliseconds first_data) {
    if (!s_.set_active(net::active::once())) return;
    std::chrono::milliseconds wait = first_data.count() > 0 ? first_data : herd::infinity;
    for (bool more = true; more;) {
      more = herd::receive(
          [&](net::tcp_data& d) {
            wait = herd::infinity;
            return on_data(d.data.view()) && s_.set_active(net::active::once());
          },
          [&](const deliver& m) {
            bool ok = bool(s_.send(*m.line));
            lag_->lines.fetch_sub(1, std::memory_order_relaxed);
            lag_->bytes.fetch_sub(m.line->size(), std::memory_order_relaxed);
            return ok;
          },
          [&](const herd::down& d) { return on_room_down(d); },
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

  bool on_data(std::string_view bytes) {
    return reader_.feed(
        bytes, [&](std::string_view line) { return on_line(line); },
        [&] { return reply("ERROR line too long (over 65536 bytes)\n"); });
  }

  bool reply(std::string_view text) { return bool(s_.send(text)); }

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
    if (!rooms_.count(std::string(name))) {
      herd::pid r = find_or_start_room(name);
      herd::monitor_ref mon = herd::monitor(r);
      try {
        herd::call<herd::ok>(r, join_room{herd::self(), lag_}, 5s);
      } catch (const herd::call_error& e) {
        herd::demonitor(mon);
        return reply("ERROR cannot join " + std::string(name) + ": " + e.what() + "\n");
      }
      rooms_.emplace(std::string(name), joined{r, mon});
    }
    return reply("OK JOIN " + std::string(name) + "\n");
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
    else if (auto p = herd::whereis(room_key(name))) r = *p;
    else return reply("ERROR no such room " + std::string(name) + "\n");
    auto line = std::make_shared<std::string>();
    line->reserve(rest.size() + 5);
    line->append("MSG ").append(rest).push_back('\n');
    herd::cast(r, publish{std::move(line)});
    return true;
  }

  bool on_room_down(const herd::down& d) {
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
  std::shared_ptr<backlog> lag_;
  std::unordered_map<std::string, joined> rooms_;
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
