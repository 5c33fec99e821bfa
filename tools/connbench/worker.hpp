// One connbench thread: its own epoll instance and its own connections.
#pragma once
#include <netinet/in.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "stats.hpp"

namespace connbench {

enum class Mode { echo, idle, chat };

// How an echo client waits for its reply (issue 21: two independent load
// shapes, so a server is not tuned to one client's syscall pattern).
// et: edge-triggered IN|OUT registered once, recv until EAGAIN per event.
// lt: level-triggered IN only (OUT only while a write is blocked), one recv
//     per event sized to the bytes still outstanding, so the client never
//     makes a recv that returns EAGAIN and never reads ahead.
enum class Client { et, lt };

struct Config {
  sockaddr_in dst{};
  std::vector<in_addr> sources;  // empty: let the kernel pick 127.0.0.1
  Mode mode = Mode::echo;
  Client client = Client::et;
  int connections = 1000;  // echo/idle: all; chat: members (+1 sender)
  int payload = 64;
  double duration = 10, warmup = 3, idle = 0;
  double rate = 5000;  // connects per second, all threads together
  double msg_rate = 20;
  double connect_timeout = 10;
  int threads = 1;
  long server_pid = 0;
};

// Written by the main thread, read by the workers.
enum Phase : int { kRun = 0, kChatSend = 1, kChatDrain = 2, kStop = 3 };
struct Control {
  std::atomic<int> phase{kRun};
  std::atomic<uint64_t> msgs_sent{0};  // chat: written by the sender's worker
  uint64_t t_start_ns = 0;
};

struct Conn;

class Worker {
 public:
  // Owns connections with global ids [first_id, first_id + count); the
  // chat sender (if owns_sender) is one more connection on top of those.
  Worker(const Config& cfg, Control& ctl, uint32_t first_id, int count, bool owns_sender);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void run();  // thread body; returns after ctl.phase == kStop, all sockets closed

  // Single writer (this worker), read by the main thread at any time.
  std::atomic<uint64_t> ready{0};  // echoed once / joined / (sender) connected
  std::atomic<uint64_t> failed{0}, disconnects{0}, mismatches{0}, round_trips{0};
  std::atomic<uint64_t> deliveries{0}, errors{0}, last_resolved_ns{0};
  Histogram hist;
  // Valid after run() returns: chat messages a member never saw.
  uint64_t missing = 0;

 private:
  static void bump(std::atomic<uint64_t>& a, uint64_t n = 1) {
    a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  void open_due_connections(uint64_t now);
  void open_one(Conn& c, uint64_t now);
  void expire_slow_connects(uint64_t now);
  void on_event(Conn& c, uint32_t ev);
  void on_established(Conn& c);
  void on_readable(Conn& c);
  void on_writable(Conn& c);
  void lt_readable(Conn& c);
  void lt_want_out(Conn& c, bool on);
  void echo_bytes(Conn& c, const char* p, size_t n);
  void chat_bytes(Conn& c, const char* p, size_t n);
  void chat_line(Conn& c, const char* p, size_t n);
  void echo_start(Conn& c);
  void echo_flush(Conn& c);
  void echo_done(Conn& c);
  void out_flush(Conn& c);
  void sender_tick(uint64_t now);
  void sender_flush();
  void resolve(Conn& c, bool ok);
  void drop(Conn& c);

  const Config& cfg_;
  Control& ctl_;
  int ep_ = -1;
  std::vector<Conn> conns_;
  size_t opened_ = 0;          // connections whose connect() has been issued
  uint64_t resolved_ = 0;      // ready or failed
  double rate_ = 0;            // this thread's share of --rate
  Conn* sender_ = nullptr;
  uint64_t send_start_ns_ = 0, sent_ = 0;
  // Scratch and the sender's backlog: allocated once, never per message.
  std::unique_ptr<char[]> wbuf_, rbuf_, ebuf_, sbuf_;
  size_t sbuf_len_ = 0, sbuf_off_ = 0;
};

}  // namespace connbench
