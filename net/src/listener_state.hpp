// What a listener's processes share: the listening socket, the connection
// count against max_connections, the acceptors' wait lists and counters.
// Held by shared_ptr by every process of the tree (and each connection);
// the last reference closes the listening socket and retires the object
// (it is an io_source: the poller may still hold a pointer to it).
#pragma once
#include <herd/actors/pid.hpp>
#include <herd/net/listener.hpp>
#include <herd/runtime/io.hpp>
#include <herd/runtime/thread_safety.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace herd::net::detail {

// Why an acceptor waits (each has its own list: a freed slot wakes only
// acceptors waiting for one, readiness only those waiting for connections).
enum class wait_reason : uint8_t { ready, slot, resume };

struct acceptor_wake {};  // the message a waiting acceptor receives

struct listener_state {
  rt::io_source src;  // first: epoll_data of the listening socket points here

  // Immutable after start_listener.
  std::string name;
  std::string bind;
  uint16_t port = 0;
  listener_options opts;
  connection_handler handler;  // emptied by stop_listener once the tree is stopped

  // Held by close_listen() and by snapshot()'s getsockopt on lfd, which runs
  // on any thread: without it the observer could read a number just closed
  // and reused.
  mutable rt::mutex lfd_m;
  // Set once by start_listener; closed by close_listen(), after the tree stopped.
  int lfd HERD_GUARDED_BY(lfd_m) = -1;
  uint64_t final_drops HERD_GUARDED_BY(lfd_m) = 0;  // listen_drops read just before the close

  // start_listener, once: the socket is registered with the poller.
  void set_listen_fd(int fd) HERD_EXCLUDES(lfd_m) {
    rt::lock_guard<rt::mutex> g(lfd_m);
    lfd = fd;
  }
  // For the acceptors, without the lock: they run only while the tree does,
  // and close_listen() runs after it stopped, so lfd does not change under them.
  int listen_fd_while_accepting() const HERD_NO_THREAD_SAFETY_ANALYSIS { return lfd; }

  // Bumped by the poller on every readiness edge of the listening socket;
  // an acceptor that hit EAGAIN waits until it moves past the value it read
  // before its accept() calls (edge-triggered: no new event comes for
  // connections that were already waiting). seq_cst: pairs with that read.
  std::atomic<uint64_t> ready_seq{0};
  // Connections alive plus slots reserved by acceptors about to accept.
  // Acceptors reserve with a CAS bounded by max_conns before accepting, so
  // max_connections is never exceeded; conns_sup gives a slot back when a
  // connection ends. seq_cst: the slot-waiters' check pairs with it.
  std::atomic<std::size_t> conns{0};
  std::atomic<std::size_t> max_conns{0};
  std::atomic<bool> suspended{false};
  std::atomic<bool> draining{false};   // relaxed: a statistic (drain_listener began)
  std::atomic<uint64_t> conns_sup{0};  // its pid; written when it starts
  std::atomic<uint64_t> sup{0};        // the listener_sup's pid

  // Statistics: relaxed.
  std::atomic<uint64_t> accepts{0};
  std::atomic<uint64_t> refusals{0};
  std::atomic<uint64_t> emfile_backoffs{0};
  std::atomic<bool> emfile_reported{false};

  // Waiting acceptors. The lock is held for a push or a pop only, never
  // across a suspension (also taken by the poller's callback).
  rt::mutex wait_m;
  std::vector<herd::pid> waiting[3] HERD_GUARDED_BY(wait_m);

  // Any thread: takes up to `want` slots; 0 when full.
  std::size_t reserve(std::size_t want) noexcept;
  // Any thread: gives `n` slots back and wakes an acceptor waiting for one.
  void unreserve(std::size_t n);
  // Any thread: wakes one acceptor waiting for `r` (true if there was one).
  bool wake_one(wait_reason r);
  // Any thread: wakes every waiting acceptor.
  void wake_all();
  // Any thread, idempotent: EPOLL_CTL_DEL and close the listening socket.
  void close_listen() noexcept;

  listener_info snapshot() const;
};

// Creates the state with a deleter that closes the socket and retires it.
std::shared_ptr<listener_state> make_listener_state();

// The processes of the tree (one file each).
void acceptor_main(std::shared_ptr<listener_state> l);
void conns_sup_main(std::shared_ptr<listener_state> l);

// The state of a running listener, or null (for tests that play an
// acceptor's part; see net/src/listener.cpp).
std::shared_ptr<listener_state> find_listener_state(std::string_view name);

}  // namespace herd::net::detail
