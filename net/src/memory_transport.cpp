// memory_transport: a pair of ends sharing one memory_pipe.
//
// Design
// ------
// * One small spin lock per pipe guards everything in it. Critical sections
//   only move bytes and flags (and copy at most 64 KiB into a pooled block):
//   nothing under the lock parks, sends or yields — herd::send counts a
//   reduction and may switch fibers, and a fiber switched out while holding
//   the lock would have its worker's next fiber spin on it.
// * Each end holds the direction it reads: its queue (a std::string whose
//   storage is freed whenever it empties, so an idle pipe holds no buffer),
//   its owner and mode, and the two fibers that may wait on that queue: its
//   own reader (passive recv) and the peer's writer (send waiting for room).
// * Waiting: under the lock the waiter checks its condition and, if unmet,
//   leaves its fiber in its slot; after unlocking it parks. A state change
//   takes the fiber out of the slot under the lock and wakes it after
//   unlocking. A wake that arrives before the park makes the park return at
//   once (the fiber's state word, runtime/fiber.hpp), and a late one is a
//   spurious wake-up for whatever the fiber parks on next — which every
//   parker in herd tolerates; fibers stay readable a grace period after they
//   die (rt::retire), as the sockets' waiters rely on too. That grace
//   period counts workers only: a close from a plain thread wakes under the
//   lock instead, where the waiter cannot have left its wait.
// * Active-mode delivery (pump): turns queued bytes (and EOF) into messages
//   to the end's owner as its mode allows, under the lock, and sends them
//   after unlocking. One pump at a time per end (`delivering`): a second one
//   leaves the work to the one running, which looks again before it stops,
//   so messages are sent in the order their bytes were written.
// * Freeing: each handle holds one reference; the last close frees the pipe.
//   Messages carry only ids and buffers, never the pipe.
#include <herd/net/memory_transport.hpp>

#include <herd/actors/process.hpp>
#include <herd/actors/send.hpp>
#include <herd/actors/spawn.hpp>
#include <herd/runtime/clock.hpp>
#include <herd/runtime/fiber.hpp>
#include <herd/runtime/sched.hpp>
#include <herd/runtime/thread_safety.hpp>

#include "buffer_pool.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <optional>

namespace herd::net {

namespace detail {

struct HERD_CAPABILITY("spin lock") spin_lock {
  std::atomic<bool> held{false};
  void lock() noexcept HERD_ACQUIRE() {
    int spins = 0;
    while (held.exchange(true, std::memory_order_acquire)) {
      while (held.load(std::memory_order_relaxed)) {
        // The holder may have been descheduled by the OS (2 cores, busy CI).
        if (++spins > 128) ::sched_yield();
      }
    }
  }
  void unlock() noexcept HERD_RELEASE() { held.store(false, std::memory_order_release); }
};

struct memory_end {
  std::string q;                   // bytes written to this end, not yet read
  uint32_t cap = 0;                // the most q holds before the writer waits
  std::atomic<uint64_t> owner{0};  // pid value; written under the lock
  rt::fiber* reader = nullptr;     // this end's owner, parked in recv
  rt::fiber* writer = nullptr;     // the peer's owner, parked in send
  socket_id id;
  int16_t count = 0;               // messages left in active::n
  active::kind mode = active::kind::passive;
  bool in_eof = false;      // the peer shut down writing, closed or aborted
  bool in_reset = false;    // ... aborted
  bool eof_told = false;    // the owner was told (tcp_closed, or recv's error)
  bool closed = false;      // this end's handle is closed
  bool out_shut = false;    // this end shut down writing
  bool delivering = false;  // a pump is sending this end's messages
};

struct memory_pipe {
  spin_lock lock;
  std::atomic<int> refs{2};
  memory_end e[2];

  static void own(memory_transport& t) {
    t.p_->e[t.side_].owner.store(herd::self().value(), std::memory_order_relaxed);
  }
  static memory_transport end(memory_pipe* p, uint8_t side) { return memory_transport(p, side); }
};

namespace {

herd::pid pid_of(uint64_t v) noexcept { return pid{static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32)}; }

std::atomic<uint64_t> g_next_memory_id{uint64_t(1) << 62};
constexpr std::size_t max_buffer_bytes = std::size_t(16) << 20;

struct HERD_SCOPED_CAPABILITY guard {
  spin_lock& l;
  explicit guard(spin_lock& x) noexcept HERD_ACQUIRE(x) : l(x) { l.lock(); }
  ~guard() HERD_RELEASE() { l.unlock(); }
};

void wake_if(rt::fiber* f) noexcept {
  if (f) rt::wake(f);
}

// Frees q's storage when it is empty: an idle end holds no buffer.
void consume(memory_end& e, std::size_t n) {
  e.q.erase(0, n);
  if (e.q.empty() && e.q.capacity() > 15) std::string().swap(e.q);
}

buffer take_bytes(memory_end& e, std::size_t max) {
  std::size_t n = std::min({e.q.size(), max ? max : large_capacity, large_capacity});
  buffer b = buffer::copy_of(std::string_view(e.q).substr(0, n));
  consume(e, n);
  return b;
}

struct outgoing {
  std::optional<buffer> data;
  bool error = false;
  bool closed = false;
  bool passive = false;
  rt::fiber* writer = nullptr;  // room was made: wake it
};

// Under the lock: what the end's mode lets go to its owner now.
bool take_messages(memory_end& e, outgoing& out) {
  if (e.closed || e.mode == active::kind::passive || e.eof_told) return false;
  if (!e.q.empty()) {
    out.data = take_bytes(e, 0);
    out.writer = std::exchange(e.writer, nullptr);
    if (e.mode == active::kind::once) {
      e.mode = active::kind::passive;
    } else if (e.mode == active::kind::n && --e.count == 0) {
      e.mode = active::kind::passive;
      out.passive = true;
    }
    return true;
  }
  if (e.in_eof) {
    e.eof_told = true;
    out.error = e.in_reset;
    out.closed = true;
    e.mode = active::kind::passive;
    return true;
  }
  return false;
}

// An exception (out of memory: a block or a message) leaves the lock free
// and the end pumpable again; what was taken with it is lost.
void pump(memory_pipe* p, int side) {
  memory_end& e = p->e[side];
  {
    guard g(p->lock);
    if (e.delivering) return;
    e.delivering = true;
  }
  try {
    for (;;) {
      outgoing out;
      herd::pid to;
      socket_id id = e.id;
      {
        guard g(p->lock);
        if (!take_messages(e, out)) {
          e.delivering = false;
          return;
        }
        to = pid_of(e.owner.load(std::memory_order_relaxed));
        if (!rt::current()) wake_if(std::exchange(out.writer, nullptr));  // see end_it
      }
      wake_if(out.writer);
      if (out.data) herd::send(to, tcp_data{id, std::move(*out.data)});
      if (out.passive) herd::send(to, tcp_passive{id});
      if (out.error) herd::send(to, tcp_error{id, error{errc::reset, 0, "the peer aborted"}});
      if (out.closed) herd::send(to, tcp_closed{id});
    }
  } catch (...) {
    guard g(p->lock);
    e.delivering = false;
    throw;
  }
}

uint64_t deadline_of(std::chrono::milliseconds t) noexcept {
  if (t == herd::infinity) return rt::no_deadline;
  if (t.count() <= 0) return rt::now_ms();
  return rt::deadline_after(t);
}

// Parks the calling owner until `ready()` (checked under the lock) or the
// deadline. `slot` is where a state change finds the fiber to wake. False on
// timeout, or when the caller must not block (an exit is unwinding).
template <class Ready>
bool wait_until(memory_pipe* p, rt::fiber* memory_end::*slot, memory_end& e, uint64_t deadline, Ready ready) {
  rt::fiber* me = rt::current();
  if (!me) return false;
  for (;;) {
    // A blocking point: signals are acted on (an exit unwinds from here).
    if (herd::detail::blocking_point()) return false;
    {
      guard g(p->lock);
      if (ready()) return true;
      if (deadline != rt::no_deadline && rt::now_ms() >= deadline) return false;
      e.*slot = me;
    }
    if (deadline == rt::no_deadline) rt::park(me);
    else rt::park_until(me, deadline);
    guard g(p->lock);
    if (e.*slot == me) e.*slot = nullptr;
  }
}

}  // namespace

}  // namespace detail

namespace {

using detail::memory_end;
using detail::memory_pipe;

std::optional<error> check_owner(const memory_pipe* p, uint8_t side) {
  if (!p) return error{errc::not_connected, 0, "the transport is closed"};
  if (herd::self().value() != p->e[side].owner.load(std::memory_order_relaxed))
    return error{errc::not_owner, 0, "only the owning process may use the transport"};
  return std::nullopt;
}

}  // namespace

memory_transport& memory_transport::operator=(memory_transport&& o) noexcept {
  if (this != &o) {
    close();
    p_ = std::exchange(o.p_, nullptr);
    side_ = o.side_;
  }
  return *this;
}

memory_transport::~memory_transport() { close(); }

socket_id memory_transport::id() const noexcept { return p_ ? p_->e[side_].id : socket_id{}; }

herd::pid memory_transport::owner() const noexcept {
  return p_ ? detail::pid_of(p_->e[side_].owner.load(std::memory_order_relaxed)) : herd::no_pid;
}

std::string memory_transport::local() const {
  return p_ ? "memory:" + std::to_string(p_->e[side_].id.v) : std::string();
}

std::string memory_transport::peer() const {
  return p_ ? "memory:" + std::to_string(p_->e[1 - side_].id.v) : std::string();
}

result<> memory_transport::set_active(active a) {
  if (auto e = check_owner(p_, side_)) return *e;
  memory_end& me = p_->e[side_];
  bool tell_passive = false;
  {
    detail::guard g(p_->lock);
    switch (a.mode()) {
      case active::kind::passive:
      case active::kind::once:
      case active::kind::always:
        me.mode = a.mode();
        me.count = 0;
        break;
      case active::kind::n: {
        long total = long(me.mode == active::kind::n ? me.count : 0) + a.count();
        if (total > 32767) return error{errc::bad_options, 0, "active::n: the count would exceed 32767"};
        if (total <= 0) {
          me.mode = active::kind::passive;
          me.count = 0;
          tell_passive = true;
        } else {
          me.mode = active::kind::n;
          me.count = static_cast<int16_t>(total);
        }
        break;
      }
    }
  }
  if (tell_passive) herd::send(herd::self(), tcp_passive{me.id});
  else if (a.mode() != active::kind::passive) detail::pump(p_, side_);
  return {};
}

result<buffer> memory_transport::recv(std::size_t max, std::chrono::milliseconds timeout) {
  if (auto e = check_owner(p_, side_)) return *e;
  memory_pipe* p = p_;
  memory_end& me = p->e[side_];
  uint64_t deadline = detail::deadline_of(timeout);
  for (;;) {
    std::optional<buffer> got;
    rt::fiber* writer = nullptr;
    bool eof = false, reset = false;
    {
      detail::guard g(p->lock);  // take_bytes may throw (out of memory)
      if (me.mode != active::kind::passive)
        return error{errc::bad_options, 0, "recv on a transport in an active mode"};
      if (!me.q.empty()) {
        got = detail::take_bytes(me, max);
        writer = std::exchange(me.writer, nullptr);
      } else if (me.in_eof) {
        eof = true;
        reset = me.in_reset && !me.eof_told;
        me.eof_told = true;
      }
    }
    detail::wake_if(writer);
    if (got) return std::move(*got);
    if (reset) return error{errc::reset, 0, "recv: the peer aborted"};
    if (eof) return error{errc::closed, 0, "recv"};
    if (!detail::wait_until(p, &memory_end::reader, me, deadline, [&] { return !me.q.empty() || me.in_eof; }))
      return error{errc::timeout, 0, "recv"};
  }
}

result<> memory_transport::send(std::string_view bytes, std::chrono::milliseconds timeout) {
  if (auto e = check_owner(p_, side_)) return *e;
  memory_pipe* p = p_;
  const int to = 1 - side_;
  memory_end& me = p->e[side_];
  memory_end& in = p->e[to];
  uint64_t deadline = rt::no_deadline;
  for (;;) {
    rt::fiber* reader = nullptr;
    {
      detail::guard g(p->lock);
      if (me.out_shut) return error{errc::closed, 0, "send after shutdown_write"};
      if (in.closed) return error{errc::reset, 0, "send: the peer closed"};
      std::size_t n = std::min(bytes.size(), in.cap - std::min<std::size_t>(in.cap, in.q.size()));
      if (n) {
        in.q.append(bytes.data(), n);
        bytes.remove_prefix(n);
        reader = std::exchange(in.reader, nullptr);
      }
    }
    detail::wake_if(reader);
    detail::pump(p, to);
    if (bytes.empty()) return {};
    if (deadline == rt::no_deadline && timeout != herd::infinity) deadline = detail::deadline_of(timeout);
    if (!detail::wait_until(p, &memory_end::writer, in, deadline,
                            [&] { return in.closed || in.q.size() < in.cap; }))
      return error{errc::timeout, 0, "send"};
  }
}

result<std::size_t> memory_transport::try_send(std::string_view bytes) {
  if (auto e = check_owner(p_, side_)) return *e;
  const int to = 1 - side_;
  memory_end& me = p_->e[side_];
  memory_end& in = p_->e[to];
  std::size_t n = 0;
  rt::fiber* reader = nullptr;
  {
    detail::guard g(p_->lock);
    if (me.out_shut) return error{errc::closed, 0, "send after shutdown_write"};
    if (in.closed) return error{errc::reset, 0, "send: the peer closed"};
    n = std::min(bytes.size(), in.cap - std::min<std::size_t>(in.cap, in.q.size()));
    in.q.append(bytes.data(), n);
    if (n) reader = std::exchange(in.reader, nullptr);
  }
  detail::wake_if(reader);
  if (n) detail::pump(p_, to);
  return n;
}

result<> memory_transport::shutdown_write() {
  if (auto e = check_owner(p_, side_)) return *e;
  const int to = 1 - side_;
  rt::fiber* reader = nullptr;
  {
    detail::guard g(p_->lock);
    p_->e[side_].out_shut = true;
    p_->e[to].in_eof = true;
    reader = std::exchange(p_->e[to].reader, nullptr);
  }
  detail::wake_if(reader);
  detail::pump(p_, to);
  return {};
}

result<> memory_transport::controlling_process(herd::pid p) {
  if (auto e = check_owner(p_, side_)) return *e;
  if (!p) return error{errc::bad_options, 0, "controlling_process: no pid"};
  detail::guard g(p_->lock);  // a pump reads the owner under the lock
  p_->e[side_].owner.store(p.value(), std::memory_order_relaxed);
  return {};
}

result<> memory_transport::set_options(const socket_options& o) {
  if (auto e = check_owner(p_, side_)) return *e;
  if (o.sndbuf < 0 || std::size_t(o.sndbuf) > detail::max_buffer_bytes)
    return error{errc::bad_options, 0, "sndbuf: 0 .. 16 MiB"};
  if (o.sndbuf > 0) {
    detail::guard g(p_->lock);
    p_->e[1 - side_].cap = static_cast<uint32_t>(o.sndbuf);
  }
  return {};
}

namespace {
void end_it(memory_pipe* p, uint8_t side, bool reset) noexcept {
  const int to = 1 - side;
  rt::fiber* writer = nullptr;
  rt::fiber* reader = nullptr;
  {
    detail::guard g(p->lock);
    memory_end& me = p->e[side];
    memory_end& in = p->e[to];
    me.closed = true;
    std::string().swap(me.q);  // nobody will read it
    writer = std::exchange(me.writer, nullptr);  // sees `closed`: reset
    if (!in.in_eof || reset) {
      in.in_eof = true;
      if (reset && !in.eof_told) {
        in.in_reset = true;
        std::string().swap(in.q);  // an abort drops what was not read
      }
    }
    reader = std::exchange(in.reader, nullptr);
    if (!rt::current()) {
      // A plain thread closing: it is no worker, so the fibers' grace period
      // (rt::retire) does not cover a wake after unlocking. Under the lock
      // the waiter cannot have left its wait (it takes the lock to).
      detail::wake_if(std::exchange(writer, nullptr));
      detail::wake_if(std::exchange(reader, nullptr));
    }
  }
  detail::wake_if(writer);
  detail::wake_if(reader);
  detail::pump(p, to);
  if (p->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p;
}
}  // namespace

void memory_transport::close() noexcept {
  if (memory_pipe* p = std::exchange(p_, nullptr)) end_it(p, side_, false);
}

void memory_transport::abort() noexcept {
  if (memory_pipe* p = std::exchange(p_, nullptr)) end_it(p, side_, true);
}

result<memory_pair_ends> memory_pair(memory_options o) {
  herd::detail::require_process("herd::net::memory_pair");
  if (o.buffer_bytes == 0 || o.buffer_bytes > detail::max_buffer_bytes)
    return error{errc::bad_options, 0, "memory_options::buffer_bytes: 1 .. 16 MiB"};
  auto* p = new memory_pipe;
  uint64_t owner = herd::self().value();
  for (memory_end& e : p->e) {
    e.cap = static_cast<uint32_t>(o.buffer_bytes);
    e.owner.store(owner, std::memory_order_relaxed);
    e.id = socket_id{detail::g_next_memory_id.fetch_add(1, std::memory_order_relaxed)};
  }
  return memory_pair_ends{memory_pipe::end(p, 0), memory_pipe::end(p, 1)};
}

result<memory_connected> memory_connect(memory_handler handler, memory_options o) {
  herd::detail::require_process("herd::net::memory_connect");
  if (!handler) return error{errc::bad_options, 0, "memory_connect: no handler"};
  auto ends = memory_pair(o);
  if (!ends) return ends.error();
  herd::pid server = herd::spawn([h = std::move(handler), s = std::move(ends->second)]() mutable {
    memory_pipe::own(s);  // before anyone else can see it: the pid is new
    h(std::move(s));
  });
  return memory_connected{std::move(ends->first), server};
}

}  // namespace herd::net
