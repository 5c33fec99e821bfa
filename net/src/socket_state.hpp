// The socket object and its state word. Design and invariants: socket.cpp.
//
// The state word, bit by bit (every change a seq_cst read-modify-write; the
// transitions are the functions below, each returning what its caller must
// do, so no compare-and-swap loop is scattered through the code):
//
//   readable       epoll reported input, EOF, hang-up or error since the
//                  reader last started a read. Set by on_ready; cleared by
//                  the reader *before* each read (so an edge that arrives
//                  during the read sets it again); set again by the reader
//                  when a read filled its block (more may be waiting).
//   writable       epoll reported output room (or an error) since the writer
//                  last hit EAGAIN. Set by on_ready; cleared by the writer
//                  after an EAGAIN, before its one retry.
//   armed          an active mode with messages left. Owner only.
//   queued         the notification is posted (in some mailbox). Set by
//                  whoever posts it (on_ready, or the owner arming); cleared
//                  only by the side that took it back (materialize, discard).
//   reader_parked  the owner sleeps in recv() or connect(); on_ready wakes
//   writer_parked  ... in send(); on_ready wakes it.            `waiter`.
//   hup            sticky: epoll reported EPOLLRDHUP, EPOLLHUP or EPOLLERR.
//                  A short read no longer means "drained" — the EOF (or the
//                  error) behind the data made its edge already and will not
//                  make another — so the reader keeps `readable` set.
//   want_write     the owner asked for one tcp_writable (notify_writable).
//                  Set by the owner; cleared by materialize when it emits the
//                  message, or by controlling_process. The note is posted for
//                  it when `writable` is (or becomes) set, as for `armed`
//                  with `readable`.
//   closed         the handle closed the fd (after EPOLL_CTL_DEL). Whoever
//                  clears `queued` while `closed` is set — or the closer,
//                  when `queued` was clear — retires the object.
#pragma once
#include <herd/actors/detail/deferred.hpp>
#include <herd/actors/pid.hpp>
#include <herd/net/tcp.hpp>
#include <herd/runtime/fiber.hpp>
#include <herd/runtime/io.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace herd::net::detail {

struct socket_impl;

// The notification: a message header the socket embeds and posts to its
// owner; its payload is the socket's address.
struct ready_note {
  herd::detail::message hdr;
  socket_impl* sock;
};

namespace st {
inline constexpr uint32_t readable = 1u << 0;
inline constexpr uint32_t writable = 1u << 1;
inline constexpr uint32_t armed = 1u << 2;
inline constexpr uint32_t queued = 1u << 3;
inline constexpr uint32_t reader_parked = 1u << 4;
inline constexpr uint32_t writer_parked = 1u << 5;
inline constexpr uint32_t closed = 1u << 6;
inline constexpr uint32_t hup = 1u << 7;
inline constexpr uint32_t want_write = 1u << 8;

// Whether the state asks for the note: armed input waiting, or room to write
// that the owner asked to hear about.
constexpr bool wants_note(uint32_t s) noexcept {
  return ((s & readable) && (s & armed)) || ((s & writable) && (s & want_write));
}
}  // namespace st

struct socket_impl {
  rt::io_source src;             // first: epoll_data points here
  std::atomic<uint32_t> state{0};
  int fd = -1;                   // owner (and close); -1 after close
  socket_id id;                  // immutable
  // The owner's pid (value()). Written by the owner (controlling_process),
  // read by on_ready to post the note: relaxed — a note posted to the old
  // owner is forwarded by materialize / discard (they compare with it).
  std::atomic<uint64_t> owner{0};
  // The fiber parked in recv/send/connect (the owner's). Written by the owner
  // before it sets reader_parked / writer_parked (seq_cst RMW, which
  // publishes it); on_ready loads it after its own RMW saw the bit. relaxed:
  // the RMW pair orders it. The fiber stays readable a grace period after it
  // dies (rt::retire), so a late wake of a fiber that moved on is harmless
  // (wake-ups may be spurious).
  std::atomic<rt::fiber*> waiter{nullptr};
  ready_note note;

  // Owner only (the process that owns the socket, on its fiber):
  active::kind mode = active::kind::passive;
  int count = 0;                 // messages left in active::n
  bool eof = false;              // read 0, or an error: no more reads
  socket_options opts;

  uint32_t load() const noexcept { return state.load(std::memory_order_seq_cst); }
};

// What a transition asks its caller to do.
struct actions {
  bool post = false;         // post the note to the owner (queued was set for it)
  bool wake_reader = false;
  bool wake_writer = false;
  bool retire = false;       // free the object (rt::retire)
};

// The poller, on readiness: adds `bits` (readable / writable); posts the
// note if armed, not queued and not closed; wakes a parked reader/writer.
inline actions on_edge(socket_impl* s, uint32_t bits) noexcept {
  uint32_t cur = s->state.load(std::memory_order_relaxed);
  for (;;) {
    uint32_t next = cur | bits;
    actions a;
    if (st::wants_note(next) && !(next & (st::queued | st::closed))) {
      next |= st::queued;
      a.post = true;
    }
    a.wake_reader = (bits & st::readable) && (cur & st::reader_parked);
    a.wake_writer = (bits & st::writable) && (cur & st::writer_parked);
    // Always an RMW, even when nothing changes: a stale `cur` must fail the
    // CAS rather than decide. seq_cst: pairs with the parker's fetch_or of *_parked (one of the two
    // RMWs sees the other's bit) and with arm()/release_note().
    if (s->state.compare_exchange_weak(cur, next, std::memory_order_seq_cst, std::memory_order_relaxed)) return a;
  }
}

// The owner: active mode on. Posts the note if input is already waiting.
inline actions arm(socket_impl* s) noexcept {
  uint32_t cur = s->state.load(std::memory_order_relaxed);
  for (;;) {
    uint32_t next = cur | st::armed;
    actions a;
    if ((next & st::readable) && !(next & (st::queued | st::closed))) {
      next |= st::queued;
      a.post = true;
    }
    if (s->state.compare_exchange_weak(cur, next, std::memory_order_seq_cst, std::memory_order_relaxed)) return a;
  }
}

// The owner: passive.
inline void disarm(socket_impl* s) noexcept { s->state.fetch_and(~st::armed, std::memory_order_seq_cst); }

// The owner: asks for one tcp_writable. Posts the note if there is room
// already (the owner's last try_send cleared `writable` on its EAGAIN, so a
// set bit means an EPOLLOUT edge came since).
inline actions want_writable(socket_impl* s) noexcept {
  uint32_t cur = s->state.load(std::memory_order_relaxed);
  for (;;) {
    uint32_t next = cur | st::want_write;
    actions a;
    if ((next & st::writable) && !(next & (st::queued | st::closed))) {
      next |= st::queued;
      a.post = true;
    }
    if (s->state.compare_exchange_weak(cur, next, std::memory_order_seq_cst, std::memory_order_relaxed)) return a;
  }
}

// Whoever took the note out of a mailbox (materialize, discard). Keeps it
// queued and asks for a re-post when armed input is still waiting (or asked
// for room is there) and `repost_ok`; otherwise clears queued, and asks for
// the object to be retired when the handle already closed.
inline actions release_note(socket_impl* s, bool repost_ok) noexcept {
  uint32_t cur = s->state.load(std::memory_order_relaxed);
  for (;;) {
    actions a;
    uint32_t next = cur;
    if (cur & st::closed) {
      next &= ~st::queued;
      a.retire = true;
    } else if (repost_ok && st::wants_note(cur)) {
      a.post = true;  // stays queued
    } else {
      next &= ~st::queued;
    }
    if (s->state.compare_exchange_weak(cur, next, std::memory_order_seq_cst, std::memory_order_relaxed)) return a;
  }
}

// Posts the note to the current owner. Any thread.
void post_note(socket_impl* s) noexcept;
// Frees the object after a grace period. Any thread.
void retire_socket(socket_impl* s) noexcept;
// The deferred_ops every note carries (readiness.cpp).
extern const herd::detail::deferred_ops note_ops;
// The poller's callback (readiness.cpp).
void on_ready(rt::io_source* src, uint32_t events) noexcept;

// Creates the object for a connected or connecting fd and registers it with
// the poller; nullptr (errno-style code in *err) on failure. The caller owns
// fd. `initial`: the state bits before the registration — writable for a
// connected socket, none for one still connecting (its handshake's end is
// the EPOLLOUT edge; clearing the bit after the registration could erase
// an edge the poller already delivered).
socket_impl* make_socket(int fd, herd::pid owner, int* err, uint32_t initial) noexcept;

// The owner: one read into a pooled block. Returns bytes (> 0), 0 at EOF,
// -errno on failure (-EAGAIN: nothing there). Follows the readable-bit
// protocol above.
long read_some(socket_impl* s, std::size_t max, buffer* out) noexcept;

// The owner: waits (parks) until `bit` (readable / writable) is set or the
// deadline passes. Returns false on timeout or when the caller must not
// block (an exit is unwinding its stack). Throws exit_unwind when an exit
// signal arrived (a blocking point).
bool wait_for(socket_impl* s, uint32_t bit, uint64_t deadline_ms);

}  // namespace herd::net::detail
