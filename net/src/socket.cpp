// tcp_socket: a TCP socket owned by one actor.
//
// Design
// ------
// * Registration. Every fd is registered with the node's one epoll once, for
//   its whole life, edge-triggered (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET).
//   epoll_data points at the socket_impl, which carries a never-reused 64-bit
//   serial (socket_id). Closing is: mark `closed`, EPOLL_CTL_DEL, close(fd);
//   the object is freed with rt::retire (after a grace period in which every
//   worker passed its loop and every poll that had begun finished
//   dispatching), so an event taken from epoll_wait before the DEL still finds
//   a live object — whose `closed` bit makes it inert — and a new socket that
//   gets the same fd number has a different object: it can never receive an
//   old socket's event.
// * One state word per socket (socket_state.hpp, bit by bit), changed only by
//   seq_cst read-modify-writes. The poller thread (on_ready) only sets
//   readable / writable and acts on what the RMW returned: wake a parked
//   reader or writer, or post the notification. Exactly one reader: the
//   owner (passive recv, or materialize during its own mailbox drain).
// * Active modes without a syscall or an allocation per arm. The socket
//   embeds one notification envelope (a deferred message, see
//   <herd/actors/detail/deferred.hpp>); the `queued` bit says it is in a
//   mailbox, so there is at most one. Arming sets `armed` (and posts at once
//   if input is already flagged). When the owner drains its mailbox the note
//   is materialized on the owner's fiber: one recv() into a pooled 64 KiB
//   block (a short read means drained: `readable` was cleared before the
//   read, so bytes arriving meanwhile flag it again), the bytes become one
//   tcp_data (small reads are copied into a 2 KiB block so kept buffers stay
//   small), the mode's count is consumed (once: disarm; n: count down, then
//   tcp_passive), and the note is released — or re-posted at once when the
//   socket is still armed and readable (a full read, or `always`).
//   Per round trip in `once` mode this costs: one RMW in on_ready, one
//   mailbox push + wake, recv(), one envelope allocation for the tcp_data
//   (every herd message is one allocation), two RMWs (clear readable,
//   release) and one RMW to re-arm.
// * Writes are made by the caller, through rt::send_batched: the fiber hands
//   its send to its worker and waits until the worker, out of other work,
//   gave every queued send to the kernel in one io_uring_enter (or it is
//   send(2) at once where that is off or refused). Only on EAGAIN does send clear
//   `writable`, retry once (an EPOLLOUT edge may have come between the
//   EAGAIN and the clear), then set `writer_parked` and park unless that RMW
//   shows `writable` set again: either the poller's RMW sees the parked bit
//   and wakes the writer, or the writer's RMW sees the poller's bit — an
//   EPOLLOUT racing the park is never lost. Nothing is queued in user space,
//   so a peer that never reads costs at most the kernel's send buffer and
//   the writer stays parked (or times out). MSG_NOSIGNAL: a peer that went
//   away is an error (errc::reset), not SIGPIPE.
// * try_send never parks: on EAGAIN it clears `writable` and retries once,
//   as send does, and returns what was taken. An owner that keeps its own
//   queue and must keep receiving meanwhile asks notify_writable: it sets
//   `want_write`, and the note (the same envelope as for input) is posted
//   when `writable` is or becomes set; materialize turns it into one
//   tcp_writable and clears `want_write`. The same RMW pairing as for input
//   means an edge racing the request is never lost.
// * Passive recv follows the same protocol with `readable` and
//   `reader_parked`. Parking is a blocking point: the owner's mailbox is
//   drained on every wake (signals acted on; an exit unwinds the stack, and
//   the handle's destructor closes the socket on the way).
// * Ownership: `owner` is the pid notes are posted to. controlling_process
//   stores a new one; a note already posted to the old owner is forwarded by
//   its materialize (owner mismatch) or its discard (the old owner died).
// * Freeing: the handle's close() sets `closed`. If the note was queued at
//   that moment, whoever takes it back (materialize or discard) sees `closed`
//   and retires the object; otherwise close() retires it. Exactly one side
//   frees, decided by the RMWs on the one word.
#include "socket_state.hpp"

#include <herd/actors/process.hpp>
#include <herd/actors/send.hpp>
#include <herd/runtime/clock.hpp>
#include <herd/runtime/io.hpp>
#include <herd/runtime/sched.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

namespace herd::net {
namespace {

using detail::socket_impl;
namespace st = detail::st;

error sys_error(int e, const char* what) {
  if (e == ECONNRESET || e == EPIPE) return {errc::reset, e, what};
  if (e == ENOTCONN) return {errc::closed, e, what};
  return {errc::system, e, what};
}

uint64_t deadline_of(std::chrono::milliseconds t) noexcept {
  if (t == herd::infinity) return rt::no_deadline;
  if (t.count() <= 0) return rt::now_ms();
  return rt::deadline_after(t);
}

}  // namespace

namespace detail {
// Owner check shared by the handle's operations.
std::optional<error> check_owner(const socket_impl* s) {
  if (!s || s->fd < 0) return error{errc::not_connected, 0, "the socket is closed"};
  if (herd::self().value() != s->owner.load(std::memory_order_relaxed))
    return error{errc::not_owner, 0, "only the owning process may use the socket"};
  return std::nullopt;
}
}  // namespace detail

tcp_socket::tcp_socket(tcp_socket&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}

tcp_socket& tcp_socket::operator=(tcp_socket&& o) noexcept {
  if (this != &o) {
    close();
    s_ = std::exchange(o.s_, nullptr);
  }
  return *this;
}

tcp_socket::~tcp_socket() { close(); }

socket_id tcp_socket::id() const noexcept { return s_ ? s_->id : socket_id{}; }
int tcp_socket::fd() const noexcept { return s_ ? s_->fd : -1; }
herd::pid tcp_socket::owner() const noexcept {
  if (!s_) return herd::no_pid;
  uint64_t v = s_->owner.load(std::memory_order_relaxed);
  return pid{static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32)};
}

void tcp_socket::close() noexcept {
  socket_impl* s = std::exchange(s_, nullptr);
  if (!s) return;
  // seq_cst: pairs with on_edge / release_note: after this RMW nobody posts
  // the note again, and exactly one of us and the note's taker frees.
  uint32_t old = s->state.fetch_or(st::closed, std::memory_order_seq_cst);
  rt::io_deregister(s->fd);  // before close(): the number may be reused at once
  ::close(s->fd);
  s->fd = -1;
  if (!(old & st::queued)) detail::retire_socket(s);
}

void tcp_socket::abort() noexcept {
  if (!s_) return;
  linger l{1, 0};
  (void)::setsockopt(s_->fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  close();
}

result<> tcp_socket::set_active(active a) {
  if (auto e = detail::check_owner(s_)) return *e;
  socket_impl* s = s_;
  switch (a.mode()) {
    case active::kind::passive:
      s->mode = active::kind::passive;
      s->count = 0;
      detail::disarm(s);
      return {};
    case active::kind::once:
    case active::kind::always:
      s->mode = a.mode();
      s->count = 0;
      break;
    case active::kind::n: {
      int base = s->mode == active::kind::n ? s->count : 0;
      long total = long(base) + a.count();
      if (total > 32767) return error{errc::bad_options, 0, "active::n: the count would exceed 32767"};
      if (total <= 0) {
        s->mode = active::kind::passive;
        s->count = 0;
        detail::disarm(s);
        herd::send(herd::self(), tcp_passive{s->id});
        return {};
      }
      s->mode = active::kind::n;
      s->count = static_cast<int>(total);
      break;
    }
  }
  if (s->eof) {
    // As inet after the close was reported: nothing more will come.
    detail::disarm(s);
    return {};
  }
  detail::actions act = detail::arm(s);
  if (act.post) detail::post_note(s);
  return {};
}

result<buffer> tcp_socket::recv(std::size_t max, std::chrono::milliseconds timeout) {
  if (auto e = detail::check_owner(s_)) return *e;
  socket_impl* s = s_;
  if (s->mode != active::kind::passive)
    return error{errc::bad_options, EINVAL, "recv on a socket in an active mode"};
  if (s->eof) return error{errc::closed, 0, "recv"};
  uint64_t deadline = deadline_of(timeout);
  bool last_try = false;
  for (;;) {
    if (s->load() & st::readable) {
      buffer b;
      long n = detail::read_some(s, max, &b);
      if (n > 0) return b;
      if (n == 0) {
        s->eof = true;
        return error{errc::closed, 0, "recv"};
      }
      if (n != -EAGAIN) {
        s->eof = true;
        return sys_error(static_cast<int>(-n), "recv");
      }
    }
    if (!detail::wait_for(s, st::readable, deadline)) {
      if (!last_try && (s->load() & st::readable)) {  // one more try before giving up
        last_try = true;
        continue;
      }
      return error{errc::timeout, ETIMEDOUT, "recv"};
    }
  }
}

result<> tcp_socket::send(std::string_view bytes, std::chrono::milliseconds timeout) {
  if (auto e = detail::check_owner(s_)) return *e;
  socket_impl* s = s_;
  const char* p = bytes.data();
  std::size_t left = bytes.size();
  uint64_t deadline = rt::no_deadline;
  bool retried = false;
  bool last_try = false;
  while (left > 0) {
    long n = rt::send_batched(s->fd, p, left);
    if (n > 0) {
      p += n;
      left -= static_cast<std::size_t>(n);
      retried = false;
      continue;
    }
    int e = n < 0 ? static_cast<int>(-n) : 0;
    if (e == EINTR) continue;
    if (n < 0 && (e == EAGAIN || e == EWOULDBLOCK)) {
      if (!retried) {
        // Clear, then try once more: an EPOLLOUT edge between the EAGAIN and
        // the clear would otherwise be lost. seq_cst: pairs with on_edge.
        s->state.fetch_and(~st::writable, std::memory_order_seq_cst);
        retried = true;
        continue;
      }
      if (deadline == rt::no_deadline && timeout != herd::infinity) deadline = deadline_of(timeout);
      if (!detail::wait_for(s, st::writable, deadline)) {
        // Timed out (or must not block: an exit is unwinding). One last
        // attempt if room was flagged meanwhile — only one: the flag may be
        // stale, and looping on it would spin.
        if (!last_try && (s->load() & st::writable)) {
          last_try = true;
          retried = false;
          continue;
        }
        return error{errc::timeout, ETIMEDOUT, "send"};
      }
      retried = false;
      continue;
    }
    return sys_error(e, "send");
  }
  return {};
}

result<std::size_t> tcp_socket::try_send(std::string_view bytes) {
  if (auto e = detail::check_owner(s_)) return *e;
  std::size_t done = 0;
  bool retried = false;
  while (done < bytes.size()) {
    long n = rt::send_batched(s_->fd, bytes.data() + done, bytes.size() - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    int e = n < 0 ? static_cast<int>(-n) : 0;
    if (e == EINTR) continue;
    if (n == 0 || e == EAGAIN || e == EWOULDBLOCK) {
      // Full. Clear `writable`, then try once more (as send does): an
      // EPOLLOUT edge between the EAGAIN and the clear sets it again, so a
      // notify_writable after this returns is answered by the next edge.
      if (retried) break;
      s_->state.fetch_and(~st::writable, std::memory_order_seq_cst);
      retried = true;
      continue;
    }
    return sys_error(e, "send");
  }
  return done;
}

result<> tcp_socket::notify_writable() {
  if (auto e = detail::check_owner(s_)) return *e;
  detail::actions act = detail::want_writable(s_);
  if (act.post) detail::post_note(s_);
  return {};
}

result<> tcp_socket::shutdown_write() {
  if (auto e = detail::check_owner(s_)) return *e;
  if (::shutdown(s_->fd, SHUT_WR) != 0) return sys_error(errno, "shutdown");
  return {};
}

result<> tcp_socket::controlling_process(herd::pid p) {
  if (auto e = detail::check_owner(s_)) return *e;
  if (!p) return error{errc::bad_options, 0, "controlling_process: no pid"};
  // relaxed: on_ready reads it to pick a mailbox; a note that went to the
  // old owner is forwarded (materialize / discard compare with this).
  s_->owner.store(p.value(), std::memory_order_relaxed);
  // Our notify_writable was ours: the new owner asks for its own.
  s_->state.fetch_and(~st::want_write, std::memory_order_seq_cst);
  // A note already in our mailbox is forwarded to p when we next drain it
  // (our next receive) or, if we never do, when we die.
  return {};
}

}  // namespace herd::net
