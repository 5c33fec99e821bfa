// The connection loop behind module_protocol: one actor per connection,
// {active, once}, and a handler_ref to the module's handler. Versions switch
// only here, between messages: after a tcp_data is taken from the mailbox and
// before the handler sees it, and before the actor hibernates (so an idle
// connection does not keep an old version loaded for as long as it idles).
// The handler_ref travels in the hibernate continuation, which is host code:
// the module stays referenced by the handler alone.
#include <herd/net/protocol.hpp>

#include <herd/actors/hibernate.hpp>
#include <herd/actors/receive.hpp>

namespace herd::net {
namespace {

using handler = herd::handler_ref<protocol>;

enum class step { more, done, idle };

void serve(handler h, tcp_socket s, protocol_options o);

step next_message(handler& h, tcp_socket& s, const protocol_options& o) {
  return herd::receive(
      [&](tcp_data& d) {
        if (h.outdated()) herd::modules::upgrade(h);
        if (!h->on_data(s, d.data.view())) return step::done;
        return s.set_active(active::once()) ? step::more : step::done;
      },
      [](const tcp_closed&) { return step::done; },
      [](const tcp_error&) { return step::done; },
      [](const listener_draining&) { return step::done; },
      herd::after(o.idle_hibernate, [] { return step::idle; }));
}

void serve(handler h, tcp_socket s, protocol_options o) {
  for (;;) {
    switch (next_message(h, s, o)) {
      case step::more:
        break;
      case step::done:
        h->on_close(s);
        return;
      case step::idle:
        if (h.outdated()) herd::modules::upgrade(h);
        herd::hibernate([h = std::move(h), s = std::move(s), o]() mutable {
          serve(std::move(h), std::move(s), o);
        });
    }
  }
}

}  // namespace

connection_handler module_protocol(std::string module, protocol_options o) {
  return [module = std::move(module), o](tcp_socket s) {
    handler h = herd::modules::create<protocol>(module);
    h->on_connect(s);
    if (!s.valid() || !s.set_active(active::once())) {
      h->on_close(s);
      return;
    }
    serve(std::move(h), std::move(s), o);
  };
}

}  // namespace herd::net
