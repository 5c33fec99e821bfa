// herd::net::protocol — a connection's behaviour as a hot-swappable module.
//
// The host runs the connection loop (net/src/protocol.cpp): it owns the
// socket and the actor, and calls into a handler made from the module's
// current version. Between two messages it checks whether a newer version
// was loaded that takes this one's state (`upgrade_from`); if so the old
// handler's export_state() goes to the new one's code_change() and the next
// bytes are the new version's. Nothing of the handler is on the stack then,
// which is what makes the switch safe.
//
// A connection is an ordinary process: herd::self() inside a callback is its
// pid. Another process pushes to it with herd::send(pid, value) — register the
// pid where the pushers find it (herd::register_name, or a gateway process
// that on_connect tells) — and the value arrives through on_message, as does
// a herd::send_after(delay, herd::self(), ...) the module set itself, or a
// start_timer. Every message in the mailbox is taken, in order, so nothing is
// left to keep an old version loaded; a message made by module code (its own
// types, send_after's) keeps that version loaded until it is taken.
//
// Idle connections switch too: the loop watches its handler
// (handler_ref::watch), so a load wakes every connection of the old version —
// hibernated or waiting — which upgrades and goes back to sleep, and the old
// version unloads without waiting for their next bytes (see docs/design.md,
// "Hot swap").
//
//   // line_handler.cpp, built with herd_add_module(line_v2 line_handler.cpp)
//   struct lines final : herd::net::protocol {
//     bool on_data(herd::net::stream& s, std::string_view bytes) override {
//       return bool(s.send(bytes));
//     }
//   };
//   HERD_MODULE(lines, "lines", "v2", "v1");
//
//   // the host
//   herd::modules::set_module_dir(dir);
//   herd::modules::load("line_v2.so");
//   herd::net::start_listener("lines", opts, herd::net::module_protocol("lines"));
#pragma once
#include <herd/actors/module.hpp>
#include <herd/actors/process.hpp>  // self(): the connection's pid
#include <herd/actors/receive.hpp>
#include <herd/actors/timers.hpp>
#include <herd/net/listener.hpp>
#include <herd/net/memory_transport.hpp>
#include <herd/net/stream.hpp>
#include <herd/net/tcp.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace herd::net {

// The callbacks get the connection's transport as a net::stream (stream.hpp):
// the same module serves TCP connections (module_protocol) and in-memory ones
// (serve_module over a memory_transport).
class protocol : public herd::handler {
 public:
  using herd_interface = protocol;

  // A new connection, before any data (not called on a handler that took
  // over a connection through code_change).
  virtual void on_connect(stream& sock) { (void)sock; }
  // Bytes from the peer, as they came (no framing). false: end the
  // connection. An exception ends the actor with it (a crash report).
  virtual bool on_data(stream& sock, std::string_view bytes) = 0;
  // Any other message: a push from another process, the module's own timer
  // (send_after to herd::self()), a protocol_timer, a monitor's down... (the
  // `info` of cowboy's websocket_info). Match with m.is<T>() / m.get<T>(); the
  // value may be moved out of *m.get<T>(). A type that crosses versions (v1
  // set the timer, v2 takes it) must keep its name and layout. false: end the
  // connection. Default: the message is dropped.
  virtual bool on_message(stream& sock, const herd::any_message& m) {
    (void)sock;
    (void)m;
    return true;
  }
  // The listener drains (listener_draining). false (the default): the
  // connection ends now (on_close follows). true: it is in the middle of
  // something (a reply that waits for a push or a timer) and goes on until
  // on_data or on_message returns false; the drain's timeout kills it if it
  // never does. A reply being written by on_data when the drain begins is
  // finished either way: this is called between messages.
  virtual bool on_draining(stream& sock) {
    (void)sock;
    return false;
  }
  // The connection is over (the peer closed or reset it, on_data or
  // on_message said so, or the listener drains); the socket may still be
  // written to. The host closes it afterwards.
  virtual void on_close(stream& sock) { (void)sock; }
};

// What start_timer delivers (through on_message).
struct protocol_timer {
  uint64_t tag = 0;
};

// From a connection's callbacks (outside any process it throws
// herd::not_in_process): protocol_timer{tag} arrives at this connection
// after `delay` (cancel with herd::cancel_timer). The message is
// made by the host, so unlike a send_after from module code it holds no
// reference on the module's version: a long timer set by v1 does not keep v1
// loaded once the connection runs v2.
herd::timer_ref start_timer(std::chrono::milliseconds delay, uint64_t tag);

struct protocol_options {
  // An idle connection hibernates (gives its stack back) after this long;
  // infinity: never.
  std::chrono::milliseconds idle_hibernate = herd::infinity;
};

// The connection handler for start_listener that runs `module`'s current
// version on each connection (with {active, once}). A connection whose
// module is not loaded ends with a module_error (a crash report).
connection_handler module_protocol(std::string module, protocol_options o = {});

// The same connection loop in the calling process (which must own `conn`),
// over either transport; returns when the connection is over. For a
// connection made without a listener:
//   herd::net::memory_connect([](herd::net::memory_transport t) {
//     herd::net::serve_module("lines", std::move(t));
//   });
void serve_module(const std::string& module, tcp_socket conn, protocol_options o = {});
void serve_module(const std::string& module, memory_transport conn, protocol_options o = {});

}  // namespace herd::net
