// chat_server's rooms: one process per room, started by its first member and
// ended when its last one goes. A room never blocks on a member's socket; it
// only sends. What it shares with each member is a member_lag (below).
//
// Flow control, from the socket back to the publisher:
// * A member's lag is what the room handed it and its socket has not taken
//   yet. A member whose socket refused bytes (the peer is not reading; the
//   member is parked in a send) and that is more than 1 MiB behind is cut
//   off: the room tells it to exit, and it says why and resets its socket.
//   Lines it merely has not written yet — a burst it is working through — do
//   not count against it: the room waits for such a member instead (below).
// * A member more than 1 MiB behind whose socket still takes bytes is slow
//   only in the CPU; the room waits, at that publish, until it is half-way
//   caught up (or its socket fills, or it ends). Meanwhile publishes queue
//   in the room's mailbox...
// * ...which is bounded too: each publisher has at most `publish_window`
//   publishes that no room has acknowledged yet (plus one read's worth of
//   lines), and stops reading its socket until they are acknowledged — TCP
//   then slows the client that sends them.
#pragma once
#include <herd/actors.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace chat_msgs {

// Shared by a connection and every room it is in. Relaxed counters compared
// with limits, except where a comment pairs two seq_cst operations.
struct member_lag {
  std::atomic<uint64_t> bytes{0};   // handed to the member, not yet taken by its socket
  std::atomic<bool> blocked{false}; // parked in a send the socket could not take
  std::atomic<bool> gone{false};    // the member ended
  std::atomic<bool> kicked{false};  // a room cut it off
  // A room waiting for it to catch up (pid::value(); 0: none). One slot: a
  // second room waiting at the same time polls instead (every 100 ms).
  std::atomic<uint64_t> waiter{0};
};

struct join_room {
  herd::pid member;
  std::shared_ptr<member_lag> lag;
};
struct leave_room {
  herd::pid member;
};
struct publish {
  std::shared_ptr<const std::string> line;  // "MSG room text\n", shared by every delivery
  herd::pid from;                           // gets `published` once it is fanned out
};
struct published {
  herd::pid room;
};
struct deliver {
  std::shared_ptr<const std::string> line;
};
struct caught_up {};  // member -> the room waiting for it

}  // namespace chat_msgs

namespace chat {

inline constexpr uint64_t max_bytes_behind = 1 << 20;
inline constexpr std::size_t publish_window = 64;
inline constexpr std::size_t max_rooms_per_connection = 1000;
// Rooms on the whole server: with max_rooms_per_connection, what keeps a few
// clients from filling the process table (rooms are processes).
inline constexpr std::size_t max_rooms = 100'000;

// Rooms alive now (one room counts from its start to its end).
inline std::atomic<std::size_t> live_rooms{0};

inline herd::pid pid_of(uint64_t v) { return herd::pid{static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32)}; }

// The member side of the waiter slot: wakes a room that waits for it.
inline void wake_waiter(chat_msgs::member_lag& lag) {
  // seq_cst: pairs with the room's store of `waiter` before it re-reads
  // bytes / blocked / gone — one of the two sees the other's write.
  if (uint64_t w = lag.waiter.exchange(0, std::memory_order_seq_cst)) herd::send(pid_of(w), chat_msgs::caught_up{});
}

struct room : herd::server<room> {
  using calls = herd::types<chat_msgs::join_room>;
  using casts = herd::types<chat_msgs::leave_room, chat_msgs::publish>;
  using infos = herd::types<herd::down, chat_msgs::caught_up>;

  struct member {
    std::shared_ptr<chat_msgs::member_lag> lag;
    herd::monitor_ref mon;
  };
  struct counted {  // live_rooms, for the process's whole life
    counted() { live_rooms.fetch_add(1, std::memory_order_relaxed); }
    ~counted() { live_rooms.fetch_sub(1, std::memory_order_relaxed); }
  };

  // Started by its first member, which is in it from the start: a room is
  // never empty, and ends when it becomes so.
  room(std::string n, chat_msgs::join_room first) : name(std::move(n)) { add(std::move(first)); }

  herd::ok handle_call(chat_msgs::join_room j, const herd::from&) {
    add(std::move(j));
    return {};
  }
  void add(chat_msgs::join_room j) {
    if (!members.count(j.member)) members.emplace(j.member, member{std::move(j.lag), herd::monitor(j.member)});
  }
  void handle_cast(const chat_msgs::leave_room& l) {
    if (auto it = members.find(l.member); it != members.end()) {
      herd::demonitor(it->second.mon);
      members.erase(it);
    }
    end_if_empty();
  }
  void handle_cast(const chat_msgs::publish& p);
  void handle_info(const herd::down& d) {
    members.erase(d.who);
    end_if_empty();
  }
  void handle_info(const chat_msgs::caught_up&) {}  // a wake-up that came after the wait

  void end_if_empty() {
    if (members.empty()) stop();
  }
  void cut_off(std::unordered_map<herd::pid, member>::iterator it);
  void wait_for(herd::pid who);

  counted count;
  std::string name;
  std::unordered_map<herd::pid, member> members;
};

inline void room::cut_off(std::unordered_map<herd::pid, member>::iterator it) {
  // It unwinds at its next blocking point (the send it is parked in is one)
  // and says why on the way out.
  it->second.lag->kicked.store(true, std::memory_order_relaxed);
  herd::exit(it->first, herd::exit_reason::shutdown("too far behind in room " + name));
  herd::demonitor(it->second.mon);
  members.erase(it);
}

inline void room::handle_cast(const chat_msgs::publish& p) {
  const uint64_t size = p.line->size();
  std::vector<herd::pid> behind;
  for (auto it = members.begin(); it != members.end();) {
    chat_msgs::member_lag& b = *it->second.lag;
    const uint64_t bytes = b.bytes.fetch_add(size, std::memory_order_relaxed) + size;
    if (bytes > max_bytes_behind && b.blocked.load(std::memory_order_relaxed)) {
      b.bytes.fetch_sub(size, std::memory_order_relaxed);
      auto next = std::next(it);
      cut_off(it);  // erases `it` only
      it = next;
      continue;
    }
    herd::send(it->first, chat_msgs::deliver{p.line});
    if (bytes > max_bytes_behind) behind.push_back(it->first);
    ++it;
  }
  for (herd::pid who : behind) wait_for(who);
  if (p.from) herd::send(p.from, chat_msgs::published{herd::self()});
  end_if_empty();
}

// A member far behind that still writes: wait until it is half-way caught
// up, its socket fills (then it is judged as above) or it ends.
inline void room::wait_for(herd::pid who) {
  using namespace std::chrono_literals;
  for (;;) {
    auto it = members.find(who);
    if (it == members.end()) return;
    chat_msgs::member_lag& b = *it->second.lag;
    uint64_t expected = 0;
    const bool mine = b.waiter.compare_exchange_strong(expected, herd::self().value(), std::memory_order_seq_cst);
    const uint64_t bytes = b.bytes.load(std::memory_order_seq_cst);
    if (bytes <= max_bytes_behind / 2 || b.gone.load(std::memory_order_seq_cst)) break;
    if (b.blocked.load(std::memory_order_seq_cst)) {
      if (bytes > max_bytes_behind) cut_off(it);
      break;
    }
    // Woken by the member (caught up, blocked or gone), or a poll when
    // another room holds its waiter slot; a member that ends also sends down.
    herd::receive([](const chat_msgs::caught_up&) {}, herd::after(mine ? 1000ms : 100ms));
  }
  if (auto it = members.find(who); it != members.end()) {
    uint64_t me = herd::self().value();
    it->second.lag->waiter.compare_exchange_strong(me, 0, std::memory_order_seq_cst);
  }
}

inline std::string room_key(std::string_view name) { return "chat.room." + std::string(name); }

}  // namespace chat
