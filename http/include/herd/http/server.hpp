// herd::http::serve — the HTTP/1.1 connection loop, run inside each
// connection's process (Cowboy's cowboy_http on Ranch):
//
//   herd::net::start_listener("api", {.port = 8080}, herd::http::serve(std::move(router)));
//
// One loop per connection, {active, once}: a read is parsed (reader.hpp),
// every request it completes is answered in order, the answers to one read
// go out in one send, and only then is the socket re-armed — a client that
// pipelines faster than the handlers answer waits in its own TCP window,
// not in the process's memory.
//
// Timers, all from receive's `after`, never a sleep:
//   head_timeout   a request head not complete this long after its first
//                  byte was seen: 408 and close (a slow-loris client).
//   body_timeout   a body not complete this long after its head: 408 and close.
//   idle_timeout   a keep-alive connection that starts no request this long:
//                  closed without a word (RFC 9112 9.5).
//   idle_hibernate an idle connection gives its stack back after this long;
//                  what it keeps is the socket handle, the router pointer and
//                  the options (the reader and the output free their buffers).
// A busy connection sets no timer: the deadlines are receive's `after`. Only
// a hibernating one starts one (send_after), for the rest of its idle time.
// Draining (listener_draining): an idle connection closes at once; one in
// the middle of a request answers it with "Connection: close", then closes.
//
// The loop is a template on the transport (net/transport.hpp) so that a
// transport other than tcp_socket can carry HTTP; serve() is the tcp one.
//
// The observer shows the connection's process with protocol "http" while
// the loop runs (hibernated too); an upgrade route's handler starts without
// it (ws::serve labels the process "websocket").
#pragma once
#include <herd/actors/hibernate.hpp>
#include <herd/actors/introspect.hpp>
#include <herd/actors/process.hpp>
#include <herd/actors/receive.hpp>
#include <herd/actors/timers.hpp>
#include <herd/http/reader.hpp>
#include <herd/http/response.hpp>
#include <herd/http/router.hpp>
#include <herd/http/stream.hpp>
#include <herd/net/listener.hpp>
#include <herd/net/tcp.hpp>
#include <herd/net/transport.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <utility>

namespace herd::http {

struct server_options {
  limits limit{};
  std::chrono::milliseconds head_timeout{10000};
  std::chrono::milliseconds body_timeout{10000};
  std::chrono::milliseconds idle_timeout{60000};  // herd::infinity: never
  std::chrono::milliseconds idle_hibernate{1000};  // herd::infinity: never
  // After a final error answer: how long to read and drop what the client
  // still sends (at most 1 MiB) before closing (see linger below).
  std::chrono::milliseconds linger_timeout{1000};
};

// From a connection process: speaks HTTP on `t` until the peer or a
// response closes it, an upgrade route takes it over, or the listener
// drains. Returns then (the transport closes when it is destroyed).
template <herd::net::transport T>
void serve_connection(T t, std::shared_ptr<const basic_router<T>> r, server_options o);

// Any thread: the connection handler for start_listener.
herd::net::connection_handler serve(router r, server_options o = {});

namespace detail {

// Sent to the connection itself when its idle keep-alive time is over; `gen`
// tells a stale timer (the connection was busy since) from the current one.
struct http_idle_expired {
  uint64_t gen = 0;
};

template <class T>
struct connection {
  T t;
  std::shared_ptr<const basic_router<T>> routes;
  server_options o;
  request_reader rd;
  std::chrono::steady_clock::time_point deadline{};  // head or body timer, when one runs
  bool timing = false;
  bool draining = false;
  std::chrono::steady_clock::time_point idle_since{};  // when the reader last became idle
  uint64_t idle_gen = 0;       // a new one per idle period (see http_idle_expired)
  herd::timer_ref idle_timer{};  // set only while hibernated
  std::string out;  // answers to the current read, sent together
};

enum class step { more, close, idle, taken };

// Sends what is queued; false when the peer is gone.
template <class T>
bool flush(connection<T>& c) {
  if (c.out.empty()) return true;
  bool ok = bool(c.t.send(c.out, herd::infinity));
  c.out.clear();
  if (c.out.capacity() > 16384) c.out.shrink_to_fit();
  return ok;
}

// Closing a socket that still has unread input sends a reset, and a reset
// can reach the client before it read the answer (it loses the 413 for the
// body it is still sending). So: half-close, then read and drop what comes
// until the peer closes, for at most linger_timeout (1 s) and 1 MiB (nginx's
// lingering_close).
template <class T>
void linger(connection<T>& c) {
  if (!c.t.shutdown_write() || !c.t.set_active(herd::net::active::once())) return;
  auto until = std::chrono::steady_clock::now() + c.o.linger_timeout;
  std::size_t dropped = 0;
  for (bool more = true; more && dropped < (1u << 20);) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    more = herd::receive(
        [&](herd::net::tcp_data& d) {
          dropped += d.data.size();
          return bool(c.t.set_active(herd::net::active::once()));
        },
        [](const herd::net::tcp_closed&) { return false; }, [](const herd::net::tcp_error&) { return false; },
        herd::after(left, [] { return false; }));
  }
}

// The final answer that ends the connection: 400/408/413/431/505, or an
// answer given before a body that will not be read.
template <class T>
step refuse(connection<T>& c, int status, int minor, std::string allow = {}) {
  response resp = response::text(status, std::string(reason_phrase(status)) + "\n");
  if (!allow.empty()) resp.set("Allow", std::move(allow));
  write_response(c.out, resp, {.version_minor = minor, .keep_alive = false});
  if (flush(c)) linger(c);
  return step::close;
}

// The head of a request with a body is in: 100-continue if it will be read.
template <class T>
step on_head(connection<T>& c) {
  const request& q = c.rd.current();
  if (!expects_continue(q) || !c.rd.body_expected()) return step::more;
  auto m = c.routes->find(q.method, q.path);
  using k = typename basic_router<T>::match::kind;
  if (m.what == k::not_found) return refuse(c, 404, q.version_minor);
  if (m.what == k::method_not_allowed) return refuse(c, 405, q.version_minor, std::move(m.allow));
  if (!flush(c)) return step::close;  // earlier answers go first
  write_continue(c.out);
  return flush(c) ? step::more : step::close;
}

// The stream's sink: the answers queued before it go out with its first bytes.
template <class T>
bool stream_send(void* ctx, std::string_view bytes) {
  auto& c = *static_cast<connection<T>*>(ctx);
  if (c.out.empty()) return bool(c.t.send(bytes, herd::infinity));
  c.out += bytes;
  return flush(c);
}

// A streamed answer (stream.hpp): true when the connection carries on.
template <class T, class Match>
bool on_stream(connection<T>& c, request& q, const Match& m, const write_options& wo) {
  response_stream out(&stream_send<T>, &c, wo);
  try {
    (*m.write)(q, m.bound, out);
    if (!out.started()) {  // the handler never answered
      refuse(c, 500, q.version_minor);
      return false;
    }
    return out.finish() && wo.keep_alive;
  } catch (const stream_closed&) {
    return false;  // the peer is gone: nothing more to write
  } catch (const std::exception&) {
    if (!out.started()) {
      refuse(c, 500, q.version_minor);
      return false;
    }
    return false;  // a body cut short: only closing tells the client
  }
}

template <class T>
step on_request(connection<T>& c) {
  request q = c.rd.take();
  bool keep = keep_alive(q) && !c.draining;
  write_options wo{.version_minor = q.version_minor, .keep_alive = keep, .head = q.method == "HEAD"};
  auto m = c.routes->find(q.method, q.path);
  using k = typename basic_router<T>::match::kind;
  switch (m.what) {
    case k::not_found:
      write_response(c.out, response::text(404, "Not Found\n"), wo);
      break;
    case k::method_not_allowed:
      write_response(c.out, response::text(405, "Method Not Allowed\n").set("Allow", std::move(m.allow)), wo);
      break;
    case k::handler: {
      response resp;
      try {
        resp = (*m.run)(q, m.bound);
      } catch (const std::exception&) {
        return refuse(c, 500, q.version_minor);
      }
      write_response(c.out, resp, wo);
      break;
    }
    case k::stream:
      return on_stream(c, q, m, wo) ? step::more : step::close;
    case k::upgrade: {
      if (!flush(c)) return step::close;
      // No longer HTTP: the new protocol labels the process itself (ws::serve: "websocket").
      herd::introspect::set_protocol(nullptr);
      std::string rest = c.rd.take_rest();
      (*m.take)(std::move(c.t), std::move(q), std::move(rest));
      return step::taken;
    }
  }
  if (!keep) {
    flush(c);
    return step::close;
  }
  return step::more;
}

template <class T>
step on_bytes(connection<T>& c, std::string_view bytes) {
  if (c.rd.idle()) {  // a new request starts: the idle period is over
    ++c.idle_gen;
    if (c.idle_timer) herd::cancel_timer(c.idle_timer);
    c.idle_timer = {};
  }
  c.rd.feed(bytes);
  for (;;) {
    step s = step::more;
    switch (c.rd.next()) {
      case request_reader::event::need_more:
        if (!flush(c)) return step::close;
        if (c.draining && c.rd.idle()) return step::close;
        if (c.rd.idle()) {
          c.timing = false;
          c.idle_since = std::chrono::steady_clock::now();
        } else if (!c.timing) {  // the head (or body) timer starts with its first byte seen
          c.timing = true;
          c.deadline = std::chrono::steady_clock::now() + c.o.head_timeout;
        }
        return step::more;
      case request_reader::event::head:
        c.timing = true;  // the body's own timer
        c.deadline = std::chrono::steady_clock::now() + c.o.body_timeout;
        s = on_head(c);
        break;
      case request_reader::event::request:
        c.timing = false;
        s = on_request(c);
        break;
      case request_reader::event::error:
        return refuse(c, c.rd.error_status(), c.rd.current().version_minor);
    }
    if (s != step::more) return s;
  }
}

// What is left of the idle keep-alive time (herd::infinity: no limit).
template <class T>
std::chrono::milliseconds idle_left(const connection<T>& c) {
  if (c.o.idle_timeout == herd::infinity) return herd::infinity;
  auto used = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - c.idle_since);
  return std::max(c.o.idle_timeout - used, std::chrono::milliseconds(0));
}

template <class T>
std::chrono::milliseconds wait_for(const connection<T>& c) {
  if (!c.timing) return std::min(c.o.idle_hibernate, idle_left(c));
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(c.deadline - std::chrono::steady_clock::now());
  return std::max(left, std::chrono::milliseconds(0));
}

template <class T>
step next_message(connection<T>& c) {
  return herd::receive(
      [&](herd::net::tcp_data& d) {
        step s = on_bytes(c, d.data.view());
        if (s != step::more) return s;
        return c.t.set_active(herd::net::active::once()) ? step::more : step::close;
      },
      [](const herd::net::tcp_closed&) { return step::close; },
      [](const herd::net::tcp_error&) { return step::close; },
      [&](const herd::net::listener_draining&) {
        c.draining = true;
        return c.rd.idle() ? step::close : step::more;
      },
      [&](const http_idle_expired& e) { return e.gen == c.idle_gen && c.rd.idle() ? step::close : step::more; },
      [](const herd::any_message&) { return step::more; },  // nothing else is for this loop
      herd::after(wait_for(c), [&] {
        if (c.timing) return refuse(c, 408, c.rd.current().version_minor);
        return idle_left(c) == std::chrono::milliseconds(0) ? step::close : step::idle;
      }));
}

// Until the connection ends or is taken (false) or goes idle (true).
template <class T>
bool loop(connection<T>& c) {
  for (;;) {
    switch (next_message(c)) {
      case step::more:
        break;
      case step::close:
        herd::introspect::set_protocol(nullptr);
        return false;
      case step::taken:
        return false;
      case step::idle:
        c.rd.shrink();
        std::string().swap(c.out);
        if (c.idle_timer) herd::cancel_timer(c.idle_timer);
        c.idle_timer = {};
        if (auto left = idle_left(c); left != herd::infinity)
          c.idle_timer = herd::send_after(left, herd::self(), http_idle_expired{c.idle_gen});
        return true;
    }
  }
}

// Woken from hibernation, the continuation is the process's whole function:
// the next hibernation is returned, not thrown (nothing to unwind).
template <class T>
herd::hibernation resume(connection<T> c) {
  if (!loop(c)) return herd::hibernation(nullptr);
  return herd::hibernated([c = std::move(c)]() mutable { return resume(std::move(c)); });
}

// The first stretch runs inside the listener's handler: its hibernation
// unwinds those frames once.
template <class T>
void run(connection<T> c) {
  if (!loop(c)) return;
  herd::hibernate([c = std::move(c)]() mutable { return resume(std::move(c)); });
}

}  // namespace detail

template <herd::net::transport T>
void serve_connection(T t, std::shared_ptr<const basic_router<T>> r, server_options o) {
  if (!t.set_active(herd::net::active::once())) return;
  herd::introspect::set_protocol("http");  // the observer's processes view
  detail::connection<T> c{.t = std::move(t), .routes = std::move(r), .o = o, .rd = request_reader(o.limit)};
  c.idle_since = std::chrono::steady_clock::now();
  detail::run(std::move(c));
}

}  // namespace herd::http
