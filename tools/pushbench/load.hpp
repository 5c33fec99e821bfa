// pushbench's event loop: N WebSocket users and K keep-alive HTTP pushers on
// one epoll instance, one thread (pushbench is meant to be pinned to one core
// beside the server's). No herd code.
#pragma once
#include <netinet/in.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "stats.hpp"  // connbench's histogram and /proc readers

namespace pushbench {

using connbench::Histogram;

constexpr int kMaxPushers = 32;

struct Config {
  sockaddr_in dst{};
  std::vector<in_addr> sources;  // empty: the kernel picks 127.0.0.1
  int connections = 1000;        // WebSocket users u0..u(N-1), one connection each
  int rooms = 0;                 // connection i joins r(i % rooms); 0: no rooms
  double push_rate = 1000;       // POST /push/user per second, all pushers together
  double room_rate = 0;          // POST /push/room per second
  int pushers = 4;               // keep-alive HTTP connections that push
  int pipeline = 16;             // requests in flight per pusher at most
  int payload = 64;              // push body bytes (padded)
  // Pushes go out on a fixed clock, every push_tick_us (what is due then),
  // not whenever the loop happens to wake: otherwise the send moments follow
  // the server's own answers and one server settles into different batching
  // regimes from run to run (docs/push-gateway.md, session 15). 0: each step.
  int push_tick_us = 250;
  // While pushing, poll without sleeping (epoll timeout 0): see --busy-poll.
  bool busy_poll = false;
  double duration = 10, warmup = 2, idle_settle = 1;
  double rate = 5000;  // WebSocket connects per second
  double connect_timeout = 10, drain = 3;
  long server_pid = 0;
  // Reconnect storm: users u0..u(storm-1) drop (half with a reset, half with
  // a FIN and no close frame) spread over storm_window seconds, starting
  // storm_at seconds into the measured window, and each reconnects at once
  // (and rejoins its room).
  int storm = 0;
  double storm_at = 1, storm_window = 1;
  // --trace FILE: every push frame's arrival time and latency, written at
  // the end (to see when the tail happens: periodic or random stalls).
  std::string trace;
};

// Everything a snapshot needs; only the loop writes, the caller reads
// between steps (one thread).
struct Counters {
  uint64_t opened = 0, upgraded = 0, joined = 0, failed = 0, disconnects = 0;
  uint64_t pushes_sent = 0, push_replies = 0, push_errors = 0, expected = 0;
  uint64_t frames = 0, lost_gaps = 0, out_of_order = 0, bad_frames = 0, error_replies = 0;
  uint64_t pings = 0, closes_1008 = 0, closes_other = 0, push_late = 0;
  // The storm: dropped by us, back (upgraded, and joined when there are
  // rooms), refused (connect or upgrade failed), and frame checks on the
  // storm's connections after their first frame per pusher (gaps there are
  // not counted in lost_gaps: a push handed to the old connection is lost
  // with it, as the protocol allows).
  uint64_t storm_dropped = 0, storm_back = 0, storm_refused = 0, storm_gaps = 0, storm_out_of_order = 0;
};

// What the connections that were up the whole run missed: user and room
// frames whose push was sent but never arrived (by sequence number).
struct StableLoss {
  uint64_t connections = 0, lost = 0;
};

struct WsConn;
struct Pusher;

class Load {
 public:
  explicit Load(const Config& cfg);
  ~Load();
  Load(const Load&) = delete;
  Load& operator=(const Load&) = delete;

  // One round of epoll plus due connects and pushes; waits up to timeout_ms.
  void step(int timeout_ms);
  void start_joins();   // every upgraded connection sends its join
  void start_pushing(); // the push schedule starts now
  void stop_pushing();
  void start_storm();   // schedules the storm's drops from now on
  bool storm_over() const;  // every dropped user is back or refused
  StableLoss stable_loss() const;

  const Counters& counters() const { return c_; }
  const Histogram& latency() const { return hist_; }
  const Histogram& room_latency() const { return room_hist_; }  // room frames only (a subset of latency())
  uint64_t last_upgrade_ns() const { return last_upgrade_ns_; }
  uint64_t storm_start_ns() const { return storm_t0_; }
  // --trace: (arrival ns, latency ns, 'U' or 'R') for every push frame.
  struct TraceRow {
    uint64_t at, latency;
    char kind;
  };
  const std::vector<TraceRow>& trace() const { return trace_; }
  uint64_t storm_last_back_ns() const { return storm_last_back_ns_; }

 private:
  void open_due(uint64_t now);
  void open_conn(WsConn& w, uint64_t now);
  void storm_due(uint64_t now);
  void conn_failed(WsConn& w);
  void conn_back();
  void expire_connects(uint64_t now);
  void on_ws(WsConn& w, uint32_t ev);
  void ws_read(WsConn& w);
  size_t ws_frames(WsConn& w, const char* p, size_t n);
  void ws_message(WsConn& w, std::string_view msg);
  void ws_send(WsConn& w, uint8_t opcode, std::string_view payload);
  void ws_flush(WsConn& w);
  void ws_drop(WsConn& w, bool count);
  void push_due(uint64_t now);
  void push_one(Pusher& p, bool room, uint64_t now);
  void on_pusher(Pusher& p, uint32_t ev);
  void pusher_flush(Pusher& p);
  void pusher_replies(Pusher& p);
  int connect_to(uint32_t id);

  const Config& cfg_;
  int ep_ = -1;
  int tick_fd_ = -1;  // timerfd every push_tick_us while pushing
  std::vector<WsConn> ws_;
  std::vector<std::unique_ptr<Pusher>> pushers_;
  Counters c_;
  Histogram hist_;
  Histogram room_hist_;
  size_t next_open_ = 0;
  uint64_t t0_ = 0, last_upgrade_ns_ = 0, push_t0_ = 0, last_expiry_ns_ = 0;
  uint64_t storm_t0_ = 0, storm_last_back_ns_ = 0;
  size_t storm_next_ = 0;  // the next user the storm drops
  bool pushing_ = false;
  uint64_t user_pushes_ = 0, room_pushes_ = 0;  // scheduled so far
  uint32_t next_user_ = 0, next_room_ = 0, next_pusher_ = 0, mask_state_ = 0x9e3779b9;
  std::unique_ptr<char[]> rbuf_;
  std::vector<TraceRow> trace_;
};

}  // namespace pushbench
