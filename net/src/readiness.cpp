// From epoll readiness to the owner's mailbox: the poller's callback, the
// notification's materialize/discard, and the owner's read and park helpers.
// The protocol is described in socket.cpp; the state word in socket_state.hpp.
#include "buffer_pool.hpp"
#include "socket_state.hpp"

#include <herd/actors/process.hpp>
#include <herd/actors/send.hpp>
#include <herd/runtime/clock.hpp>
#include <herd/runtime/sched.hpp>

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace herd::net::detail {
namespace {

pid pid_of(uint64_t v) noexcept { return pid{static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32)}; }

socket_impl* sock_of(herd::detail::message* note) noexcept {
  return reinterpret_cast<ready_note*>(note)->sock;
}

void act(socket_impl* s, const actions& a) noexcept {
  if (a.post) post_note(s);
  if (a.retire) retire_socket(s);
}

// Appends a message to a materialized list.
struct msg_list {
  herd::detail::message* head = nullptr;
  herd::detail::message* tail = nullptr;
  template <class T>
  void add(T&& v) {
    herd::detail::message* m = herd::detail::make_message<std::decay_t<T>>(std::forward<T>(v));
    m->next.store(nullptr, std::memory_order_relaxed);
    if (tail) tail->next.store(m, std::memory_order_relaxed);
    else head = m;
    tail = m;
  }
};

error error_from(int e, const char* what) {
  if (e == ECONNRESET || e == EPIPE) return {errc::reset, e, what};
  if (e == ETIMEDOUT) return {errc::timeout, e, what};
  return {errc::system, e, what};
}

// The owner, draining its mailbox: one read, turned into messages.
herd::detail::message* materialize(herd::detail::message* note, pid self) {
  socket_impl* s = sock_of(note);
  if (s->owner.load(std::memory_order_relaxed) != self.value()) {
    // Ownership moved (controlling_process) after the note was posted: the
    // readiness follows the socket to its new owner.
    act(s, release_note(s, true));
    return nullptr;
  }
  uint32_t cur = s->load();
  if (cur & st::closed) {
    act(s, release_note(s, false));
    return nullptr;
  }
  msg_list out;
  if ((cur & st::want_write) && (cur & st::writable)) {
    // One message per request (notify_writable); the owner asks again after
    // its next try_send that finds the buffer full.
    s->state.fetch_and(~st::want_write, std::memory_order_seq_cst);
    out.add(tcp_writable{s->id});
  }
  // armed implies !eof: eof disarms, and set_active does not arm after it.
  if (!(cur & st::armed) || !(cur & st::readable) || s->eof) {
    act(s, release_note(s, true));
    return out.head;
  }
  buffer b;
  long n = read_some(s, 0, &b);
  if (n > 0) {
    out.add(tcp_data{s->id, std::move(b)});
    if (s->mode == active::kind::once) {
      s->mode = active::kind::passive;
      disarm(s);
    } else if (s->mode == active::kind::n && --s->count == 0) {
      s->mode = active::kind::passive;
      disarm(s);
      out.add(tcp_passive{s->id});
    }
  } else if (n == 0) {
    s->eof = true;
    s->mode = active::kind::passive;
    disarm(s);
    out.add(tcp_closed{s->id});
  } else if (n != -EAGAIN) {
    s->eof = true;
    s->mode = active::kind::passive;
    disarm(s);
    out.add(tcp_error{s->id, error_from(static_cast<int>(-n), "recv")});
    out.add(tcp_closed{s->id});
  }
  act(s, release_note(s, true));
  return out.head;
}

void discard(herd::detail::message* note, pid holder) noexcept {
  socket_impl* s = sock_of(note);
  // Re-post only to someone else: the holder is gone (or never got it).
  act(s, release_note(s, s->owner.load(std::memory_order_relaxed) != holder.value()));
}

void free_socket(void* p) { delete static_cast<socket_impl*>(p); }

std::atomic<uint64_t> g_next_id{0};

}  // namespace

const herd::detail::deferred_ops note_ops = [] {
  herd::detail::deferred_ops o{};
  o.destroy = nullptr;  // never destroyed by the mailbox: it belongs to its socket
  o.name = "herd::net::ready_note";
  o.name_len = sizeof("herd::net::ready_note") - 1;
  o.size = sizeof(socket_impl*);
  o.materialize = &materialize;
  o.discard = &discard;
  return o;
}();

void post_note(socket_impl* s) noexcept {
  // Nothing of s is touched after the push: the owner may materialize,
  // close and retire it at once on another worker.
  herd::detail::post_deferred(pid_of(s->owner.load(std::memory_order_relaxed)), &s->note.hdr);
}

void retire_socket(socket_impl* s) noexcept { rt::retire(s, &free_socket); }

// The poller's look ahead (io_source::prefetch): the owner's slot, then its
// control block; stage 0 also the note, which post_note writes.
void prefetch_ready(const rt::io_source* src, int stage) noexcept {
  auto* s = reinterpret_cast<const socket_impl*>(src);
  if (stage == 0) __builtin_prefetch(&s->note, 1);
  herd::detail::prefetch_post(pid_of(s->owner.load(std::memory_order_relaxed)), stage);
}

void on_ready(rt::io_source* src, uint32_t events) noexcept {
  auto* s = reinterpret_cast<socket_impl*>(src);
  uint32_t bits = 0;
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) bits |= st::readable;
  if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) bits |= st::hup;
  if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) bits |= st::writable;
  actions a = on_edge(s, bits);
  if (a.wake_reader || a.wake_writer)
    if (rt::fiber* f = s->waiter.load(std::memory_order_relaxed)) rt::wake(f);
  if (a.post) post_note(s);
}

socket_impl* make_socket(int fd, pid owner, int* err, uint32_t initial) noexcept {
  auto* s = new (std::nothrow) socket_impl;
  if (!s) {
    *err = ENOMEM;
    return nullptr;
  }
  s->src.on_ready = &on_ready;
  s->src.prefetch = &prefetch_ready;
  s->fd = fd;
  // relaxed: a unique serial; nothing is published through it.
  s->id = socket_id{g_next_id.fetch_add(1, std::memory_order_relaxed) + 1};
  s->owner.store(owner.value(), std::memory_order_relaxed);
  s->note.hdr.ops = &note_ops;
  s->note.hdr.type = herd::detail::type_id<ready_note>;
  s->note.sock = s;
  // Readable only when epoll says so (EPOLL_CTL_ADD reports input already
  // waiting as an event of its own).
  s->state.store(initial, std::memory_order_relaxed);
  // The registration publishes s to the poller (epoll_ctl is a full barrier).
  int rc = rt::io_register(fd, &s->src, EPOLLIN | EPOLLOUT | EPOLLRDHUP);
  if (rc < 0) {
    *err = -rc;
    delete s;
    return nullptr;
  }
  return s;
}

long read_some(socket_impl* s, std::size_t max, buffer* out) noexcept {
  std::size_t cap = large_capacity;
  if (max && max < cap) cap = max;
  block* b = acquire_block(1);
  if (!b) return -ENOMEM;
  // Clear before reading: an edge for bytes that arrive during the read sets
  // it again. seq_cst: pairs with on_edge's RMW.
  s->state.fetch_and(~st::readable, std::memory_order_seq_cst);
  ssize_t n;
  do {
    n = ::recv(s->fd, b->bytes(), cap, 0);
  } while (n < 0 && errno == EINTR);
  int e = errno;  // copied at once (a later suspension may move us)
  if (n <= 0) {
    release_block(b);
    if (n == 0) {
      s->state.fetch_or(st::readable, std::memory_order_seq_cst);  // EOF stays readable
      return 0;
    }
    if (e == EAGAIN || e == EWOULDBLOCK) return -EAGAIN;
    s->state.fetch_or(st::readable, std::memory_order_seq_cst);
    return -e;
  }
  auto got = static_cast<std::size_t>(n);
  // A full read: more may be waiting and no edge will say so. After a
  // hang-up the EOF (or error) waits behind the data, edge already spent.
  if (got == cap || (s->load() & st::hup)) s->state.fetch_or(st::readable, std::memory_order_seq_cst);
  if (got <= small_capacity) {
    if (block* small = acquire_block(0)) {
      std::memcpy(small->bytes(), b->bytes(), got);
      release_block(b);
      b = small;
    }
  }
  *out = buffer_access::make(b, got);
  return n;
}

bool wait_for(socket_impl* s, uint32_t bit, uint64_t deadline_ms) {
  uint32_t parked = bit == st::readable ? st::reader_parked : st::writer_parked;
  rt::fiber* me = rt::current();
  if (!me) return false;  // not in a process: no way to wait
  for (;;) {
    // A blocking point: signals are acted on (an exit unwinds from here).
    if (herd::detail::blocking_point()) return false;
    if (s->load() & bit) return true;
    if (deadline_ms != rt::no_deadline && rt::now_ms() >= deadline_ms) return false;
    s->waiter.store(me, std::memory_order_relaxed);
    // seq_cst: pairs with on_edge's RMW — either it sees the parked bit and
    // wakes us, or we see its bit here and do not sleep.
    uint32_t old = s->state.fetch_or(parked, std::memory_order_seq_cst);
    if (!(old & bit)) {
      if (deadline_ms == rt::no_deadline) rt::park(me);
      else rt::park_until(me, deadline_ms);
    }
    s->state.fetch_and(~parked, std::memory_order_seq_cst);
  }
}

}  // namespace herd::net::detail
