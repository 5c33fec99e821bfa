// The connection loop behind module_protocol and serve_module: one actor per
// connection, over a tcp_socket or a memory_transport (the loop is a template
// on the transport; the handler sees it as a net::stream),
// {active, once}, and a handler_ref to the module's handler. Versions switch
// only here, between messages: after a message is taken from the mailbox and
// before the handler sees it, and before the actor hibernates.
//
// The handler is watched (handler_ref::watch): when its version stops being
// current, a modules::code_changed arrives. A connection asleep in hibernate
// wakes for it, upgrades and hibernates again at once; one waiting in its
// idle receive upgrades and goes on waiting. So a load switches every idle
// connection that can switch, and the old version unloads without waiting for
// bytes that may never come.
//
// Every message is taken: the TCP ones, listener_draining and code_changed
// here, anything else through on_message — a message left in the mailbox
// would keep the actor from hibernating and, if module code made it, its
// version loaded.
//
// The handler_ref travels in the hibernate continuation, which is host code:
// the module stays referenced by the handler alone.
//
// A switch that throws (export_state, the new factory or code_change) leaves
// the connection on its version: upgrade() left the handler untouched, the
// loop logs it and goes on, and the message in hand goes to the old handler.
// The handler does not try that version again (handler_slot::refused); the
// failures are counted on the version (modules::list, the observer). Ending
// the connection instead lost every live connection of a node to one bad
// code_change.
#include <herd/net/protocol.hpp>

#include <herd/actors/hibernate.hpp>
#include <herd/actors/logger.hpp>
#include <herd/actors/process.hpp>
#include <herd/actors/receive.hpp>

namespace herd::net {
namespace {

using handler = herd::handler_ref<protocol>;

enum class step {
  more,      // go on
  done,      // end the connection
  idle,      // nothing came for idle_hibernate: hibernate
  switched,  // only a code change happened: a hibernated connection sleeps again
};

void switch_if_outdated(handler& h) {
  if (!h.outdated()) return;
  try {
    herd::modules::upgrade(h);
  } catch (const herd::module_error& e) {
    herd::log_report("connection " + herd::process_label(herd::self()) + " stays on " + std::string(h.module()) +
                     " " + std::string(h.version()) + ": switching failed: " + e.what());
  }
}

template <class T>
step next_message(handler& h, T& conn, const protocol_options& o) {
  stream s(conn);
  return herd::receive(
      [&](tcp_data& d) {
        switch_if_outdated(h);
        if (!h->on_data(s, d.data.view())) return step::done;
        return conn.set_active(active::once()) ? step::more : step::done;
      },
      [](const tcp_closed&) { return step::done; },
      [](const tcp_error&) { return step::done; },
      [&](const listener_draining&) {
        switch_if_outdated(h);
        return h->on_draining(s) ? step::more : step::done;
      },
      [&](const herd::modules::code_changed&) {
        switch_if_outdated(h);
        return step::switched;
      },
      [&](const herd::any_message& m) {
        switch_if_outdated(h);
        return h->on_message(s, m) ? step::more : step::done;
      },
      herd::after(o.idle_hibernate, [] { return step::idle; }));
}

// `woken`: called from the hibernate continuation. A template on the
// transport (not a stream): the hibernate continuation must own it.
template <class T>
void serve(handler h, T s, protocol_options o, bool woken) {
  for (;;) {
    step st = next_message(h, s, o);
    if (st == step::switched && woken) st = step::idle;
    woken = false;
    switch (st) {
      case step::more:
      case step::switched:
        break;
      case step::done: {
        stream st(s);
        h->on_close(st);
        return;
      }
      case step::idle:
        switch_if_outdated(h);
        herd::hibernate([h = std::move(h), s = std::move(s), o]() mutable {
          serve(std::move(h), std::move(s), o, true);
        });
    }
  }
}

template <class T>
void start(const std::string& module, T s, const protocol_options& o) {
  handler h = herd::modules::create<protocol>(module);
  h.watch();
  stream st(s);
  h->on_connect(st);
  if (!s.valid() || !s.set_active(active::once())) {
    h->on_close(st);
    return;
  }
  serve(std::move(h), std::move(s), o, false);
}

}  // namespace

herd::timer_ref start_timer(std::chrono::milliseconds delay, uint64_t tag) {
  herd::detail::require_process("herd::net::start_timer");  // the timer is for the caller
  return herd::send_after(delay, herd::self(), protocol_timer{tag});
}

connection_handler module_protocol(std::string module, protocol_options o) {
  return [module = std::move(module), o](tcp_socket s) { start(module, std::move(s), o); };
}

void serve_module(const std::string& module, tcp_socket conn, protocol_options o) {
  start(module, std::move(conn), o);
}

void serve_module(const std::string& module, memory_transport conn, protocol_options o) {
  start(module, std::move(conn), o);
}

}  // namespace herd::net
