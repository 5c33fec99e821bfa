// herd::ws::behaviour — a WebSocket handler as a hot-swappable module, as
// herd::net::protocol is for raw TCP (net/protocol.hpp).
//
// The module implements ws::behaviour (the callbacks of ws::handler, plus
// herd::handler's export_state / code_change) and exports it with
// HERD_MODULE. The host serves it with ws::module_handler(name), an ordinary
// ws::handler made of host code that holds the module's handler and, before
// each callback, switches it to a newer version that takes its state
// (upgrade_from): the old handler's export_state() goes to the new one's
// code_change(), between two frames or messages — nothing of the handler is
// on the stack then.
//
// Idle connections switch too: the handler is watched (handler_ref::watch),
// so a load sends every connection of the old version a
// modules::code_changed, which wakes a hibernated one; it switches and
// sleeps again after idle_hibernate. The old version unloads once no
// connection holds it. A switch that fails (export_state, the factory or
// code_change throws) leaves the connection on its version, logged and
// counted on the new version (modules::list, the observer); a file that fails
// to load never becomes current (modules::load says why).
//
//   // counter.cpp, built with herd_add_module(counter_v2 counter.cpp)
//   struct counter final : herd::ws::behaviour {
//     void handle(herd::ws::session& s, const herd::ws::event& e) override {
//       if (e.type == herd::ws::event::kind::text) s.text(std::to_string(++n));
//     }
//     std::string export_state() override { return std::to_string(n); }
//     void code_change(std::string_view, std::string st) override { n = std::stoull(st); }
//     uint64_t n = 0;
//   };
//   HERD_MODULE(counter, "counter", "v2", "v1");
//
//   // the host, in the connection's process after the upgrade request:
//   (void)herd::ws::serve(std::move(sock), req, rest, herd::ws::module_handler("counter"), opts);
#pragma once
#include <herd/actors/module.hpp>
#include <herd/websocket/connection.hpp>

#include <memory>
#include <string_view>

namespace herd::ws {

class behaviour : public herd::handler {
 public:
  using herd_interface = behaviour;

  // As ws::handler's callbacks (connection.hpp). init is not called on a
  // handler that took a connection over through code_change.
  virtual void init(session& s, const http::request& r) {
    (void)s;
    (void)r;
  }
  virtual void handle(session& s, const event& e) = 0;
  // Any other message (a push, the module's own timer). A type that crosses
  // versions (v1 set the timer, v2 takes it) must keep its name and layout.
  virtual void info(session& s, const herd::any_message& m) {
    (void)s;
    (void)m;
  }
  // Once, when the connection stops taking frames (ws::handler::closing):
  // leave the registries that hand this connection work.
  virtual void closing(session& s) { (void)s; }
  virtual void terminate(const ending& how) { (void)how; }
};

// From the connection's process (it owns the handler): a handler running
// `module`'s current version, for ws::serve. Throws herd::module_error when
// the module is not loaded or does not implement ws::behaviour (the
// connection ends with a crash report, as with net::module_protocol).
std::unique_ptr<handler> module_handler(std::string_view module);

}  // namespace herd::ws
