// herd::ws::serve — the connection loop described in connection.hpp, as a
// template over the transport (herd::net::transport: tcp_socket today, an
// in-memory transport later). A transport with try_send (tcp_socket) gets
// the non-blocking writer; one without it falls back to send() bounded by
// close_timeout, which blocks the process while the peer is slow. When the
// socket refuses bytes, a transport with notify_writable (tcp_socket) wakes
// the loop with tcp_writable as soon as it has room — meanwhile the process
// waits in receive with no timer and may hibernate like an idle one; one
// without it retries on a timer (1 ms doubling to 64 ms).
//
// From the connection's process, which owns `sock`, after the HTTP layer
// read `req` (an upgrade request) and `rest` (bytes that came after its
// head). Writes the handshake answer; a refused upgrade returns an error
// after writing the refusal (and closing the socket). An accepted one runs
// the connection until it ends. Call it last: with idle_hibernate set, the
// process hibernates inside it, and a hibernated process does not come back
// to the caller's frame — it ends when the connection does.
#pragma once
#include <herd/actors/hibernate.hpp>
#include <herd/actors/introspect.hpp>
#include <herd/actors/process.hpp>
#include <herd/actors/timers.hpp>
#include <herd/net/listener.hpp>
#include <herd/net/transport.hpp>
#include <herd/websocket/connection.hpp>

#include <algorithm>
#include <memory>
#include <string_view>

namespace herd::ws {

struct error {
  enum class errc : uint8_t { refused, io } code;
  int status = 0;           // refused: the HTTP status written
  std::string detail = {};  // what was wrong
  std::string message() const;
};

namespace detail {

using clock = std::chrono::steady_clock;
struct ping_tick {};

template <class T>
struct conn {
  T sock;
  std::unique_ptr<handler> h;
  session s;
  std::shared_ptr<const options> opts;  // shared by a listener's connections: not copied into each
  const options& o() const noexcept { return *opts; }
  clock::time_point last_in{};
  clock::time_point close_deadline{};
  herd::timer_ref ping_timer{};
  std::chrono::milliseconds retry{1};
  bool eof = false;
  bool want_write = false;  // notify_writable asked, its tcp_writable not yet taken
  bool write_shut = false;
  bool failed = false;  // the socket failed, or slow consumer: stop now
  bool slow = false;
  bool told_closing = false;  // handler::closing was called
};

template <class T>
constexpr bool wakes_on_writable = requires(T& t) { t.notify_writable(); };

template <class T>
bool write_some(conn<T>& c) {
  while (!c.s.pending().empty()) {
    if constexpr (requires { c.sock.try_send(std::string_view{}); }) {
      auto r = c.sock.try_send(c.s.pending());
      if (!r) return false;
      c.s.written(*r);
      if (c.s.pending().empty()) break;
      // Full: the rest goes when the socket says it has room.
      if constexpr (wakes_on_writable<T>) {
        if (!c.want_write) {
          if (!c.sock.notify_writable()) return false;
          c.want_write = true;
        }
      }
      return true;
    } else {
      if (!c.sock.send(c.s.pending(), c.o().close_timeout)) return false;
      c.s.written(c.s.pending().size());
    }
  }
  c.retry = std::chrono::milliseconds(1);
  return true;
}

template <class T>
void drain_events(conn<T>& c) {
  while (auto e = c.s.next())
    if (e->type != event::kind::fail) c.h->handle(c.s, *e);
}

// After every step: write, apply the queue limit, and half-close once our
// close frame is out.
template <class T>
void settle(conn<T>& c) {
  if (c.failed) return;
  if (!write_some(c)) {
    c.failed = true;
    return;
  }
  if (!c.slow && (c.s.queued_frames() > c.o().max_queued_frames || c.s.queued_bytes() > c.o().max_queued_bytes)) {
    // A slow consumer: what it has not started to take is dropped (memory
    // stays bounded), its close frame 1008 follows the frame in progress,
    // and it has close_timeout to read them before the socket is aborted.
    count_slow_consumer();
    c.slow = true;
    c.s.drop_unstarted();
    if (c.s.open()) {
      c.s.close(close_code::policy, "slow consumer");
    }
    if (!write_some(c)) {
      c.failed = true;
      return;
    }
  }
  // The observer's view of the queue: two relaxed stores into this
  // process's own control block.
  herd::introspect::set_out_queue(c.s.queued_frames(), c.s.queued_bytes());
  if (!c.s.open() && !c.told_closing) {
    c.told_closing = true;
    c.h->closing(c.s);
  }
  if (!c.s.open() && c.close_deadline == clock::time_point{}) c.close_deadline = clock::now() + c.o().close_timeout;
  if (!c.s.open() && c.s.pending().empty() && !c.write_shut) {
    (void)c.sock.shutdown_write();
    c.write_shut = true;
  }
}

template <class T>
bool finished(const conn<T>& c) {
  if (c.failed) return true;
  // The close handshake is complete and our close is written: a server
  // closes TCP first (RFC 6455 7.1.1). After a protocol error (we closed,
  // the peer's close has not come), the loop instead waits for the peer's
  // EOF up to close_timeout: closing with its unread bytes in our buffer
  // would reset the connection and could destroy our close frame in flight.
  if (c.s.status() == session::state::closed && c.s.received_code() != 0 && c.s.pending().empty()) return true;
  if (c.eof) return c.s.pending().empty() || c.s.open();  // nothing more can be read; writes would fail soon
  return false;
}

template <class T>
void end(conn<T>& c) {
  herd::cancel_timer(c.ping_timer);
  ending how{c.s.sent_code(), c.s.received_code(), c.slow, c.s.status() != session::state::closed || c.failed};
  // A slow consumer that never took its close frame: a reset, so the kernel
  // frees what it still holds for it at once.
  if (c.slow && !(c.s.pending().empty() && c.s.status() == session::state::closed)) {
    if constexpr (requires { c.sock.abort(); }) {
      c.sock.abort();  // its unread backlog goes with it
    } else {
      c.sock.close();
    }
  } else {
    c.sock.close();
  }
  herd::introspect::set_out_queue(0, 0);
  herd::introspect::set_protocol(nullptr);
  c.h->terminate(how);
}

template <class T>
void on_tick(conn<T>& c) {
  if (!c.s.open()) return;
  if (clock::now() - c.last_in >= 2 * c.o().ping_interval) {
    count_timeout();
    c.s.close(c.o().timeout_code, "timeout");
    return;
  }
  c.s.ping();
  c.ping_timer = herd::send_after(c.o().ping_interval, herd::self(), ping_tick{});
}

enum class step : uint8_t { more, timeout };

// One stretch of the connection: until it ends or goes idle.
enum class outcome : uint8_t { ended, idle };

template <class T>
outcome loop(conn<T>* c) {
  for (;;) {
    if (finished(*c)) return end(*c), outcome::ended;
    std::chrono::milliseconds wait = c->o().idle_hibernate;
    if (!c->s.open()) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(c->close_deadline - clock::now());
      if (left <= std::chrono::milliseconds(0)) return end(*c), outcome::ended;  // the close handshake ran out of time
      wait = left;
    }
    if constexpr (!wakes_on_writable<T>)
      if (!c->s.pending().empty()) wait = std::min(wait, c->retry);
    step st = herd::receive(
        [&](net::tcp_data& d) {
          c->last_in = clock::now();
          c->s.feed(d.data.view());
          drain_events(*c);
          if (!c->sock.set_active(net::active::once())) c->failed = true;
          return step::more;
        },
        [&](const net::tcp_closed&) {
          c->eof = true;
          return step::more;
        },
        [&](const net::tcp_error&) {
          c->eof = true;
          return step::more;
        },
        [&](const net::listener_draining&) {
          c->s.close(close_code::going_away, "draining");
          return step::more;
        },
        [&](const ping_tick&) {
          on_tick(*c);
          return step::more;
        },
        [&](const net::tcp_writable&) {
          c->want_write = false;  // settle() writes what the socket takes now
          return step::more;
        },
        [&](const herd::any_message& m) {
          if (c->s.open()) c->h->info(c->s, m);
          return step::more;
        },
        herd::after(wait, [] { return step::timeout; }));
    if (st == step::timeout) {
      if (!wakes_on_writable<T> && !c->s.pending().empty()) {
        c->retry = std::min(c->retry * 2, std::chrono::milliseconds(64));
      } else if (!c->s.open()) {
        continue;  // the close deadline is checked at the top
      } else {
        c->s.shrink();
        return outcome::idle;
      }
    }
    settle(*c);
  }
}

// Woken from hibernation, the continuation is the process's whole function:
// the next hibernation is returned, not thrown — nothing to unwind (a thrown
// one cost several µs of unwinder per wake, most of a push's user-space CPU
// on a gateway whose connections hibernate between pushes).
template <class T>
herd::hibernation resume(std::unique_ptr<conn<T>> c) {
  if (loop(c.get()) == outcome::ended) return herd::hibernation(nullptr);
  return herd::hibernated([c = std::move(c)]() mutable { return resume(std::move(c)); });
}

// The first stretch runs deep in the connection's call chain (listener,
// HTTP loop, upgrade route): its hibernation unwinds those frames once.
template <class T>
void run(std::unique_ptr<conn<T>> c) {
  if (loop(c.get()) == outcome::ended) return;
  herd::hibernate([c = std::move(c)]() mutable { return resume(std::move(c)); });
}

}  // namespace detail

// `opts` may be shared by every connection of a listener (an idle
// connection then does not carry its own copy).
template <net::transport T>
herd::result<herd::ok, error> serve(T sock, const http::request& req, std::string_view rest,
                                    std::unique_ptr<handler> h, std::shared_ptr<const options> opts) {
  const options& o = *opts;
  auto hs = accept_upgrade(req, o.handshake);
  if (!hs.accepted) {
    (void)sock.send(hs.response, o.close_timeout);
    sock.close();
    return error{error::errc::refused, hs.status, hs.why};
  }
  if (auto r = sock.send(hs.response, o.close_timeout); !r) return error{error::errc::io, 0, r.error().message()};
  detail::count_opened();
  herd::introspect::set_protocol("websocket");  // the observer's processes view
  auto c = std::make_unique<detail::conn<T>>(
      detail::conn<T>{std::move(sock), std::move(h), session(o.parser, hs.protocol), opts});
  c->last_in = detail::clock::now();
  c->h->init(c->s, req);
  c->s.feed(rest);
  detail::drain_events(*c);
  if (o.ping_interval != herd::infinity)
    c->ping_timer = herd::send_after(o.ping_interval, herd::self(), detail::ping_tick{});
  if (!c->sock.set_active(net::active::once())) c->failed = true;
  detail::settle(*c);
  detail::run(std::move(c));
  return herd::ok{};
}

template <net::transport T>
herd::result<herd::ok, error> serve(T sock, const http::request& req, std::string_view rest,
                                    std::unique_ptr<handler> h, options o = {}) {
  return serve(std::move(sock), req, rest, std::move(h), std::make_shared<const options>(std::move(o)));
}

}  // namespace herd::ws
