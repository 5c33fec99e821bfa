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
//   // line_handler.cpp, built with herd_add_module(line_v2 line_handler.cpp)
//   struct lines final : herd::net::protocol {
//     bool on_data(herd::net::tcp_socket& s, std::string_view bytes) override {
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
#include <herd/net/listener.hpp>
#include <herd/net/tcp.hpp>

#include <chrono>
#include <string>
#include <string_view>

namespace herd::net {

class protocol : public herd::handler {
 public:
  using herd_interface = protocol;

  // A new connection, before any data (not called on a handler that took
  // over a connection through code_change).
  virtual void on_connect(tcp_socket& sock) { (void)sock; }
  // Bytes from the peer, as they came (no framing). false: end the
  // connection. An exception ends the actor with it (a crash report).
  virtual bool on_data(tcp_socket& sock, std::string_view bytes) = 0;
  // The connection is over (the peer closed or reset it, on_data said so, or
  // the listener drains); the socket may still be written to. The host
  // closes it afterwards.
  virtual void on_close(tcp_socket& sock) { (void)sock; }
};

struct protocol_options {
  // An idle connection hibernates (gives its stack back) after this long;
  // infinity: never.
  std::chrono::milliseconds idle_hibernate = herd::infinity;
};

// The connection handler for start_listener that runs `module`'s current
// version on each connection (with {active, once}). A connection whose
// module is not loaded ends with a module_error (a crash report).
connection_handler module_protocol(std::string module, protocol_options o = {});

}  // namespace herd::net
