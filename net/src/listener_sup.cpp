// listener_sup and acceptors_sup: the listener's supervision tree, as
// Ranch's ranch_listener_sup / ranch_acceptors_sup.
//
//   listener_sup   rest_for_one: conns_sup first, then acceptors_sup — if
//                  conns_sup dies, the acceptors that hand it sockets are
//                  restarted after it; an acceptor's crash touches nothing else.
//   acceptors_sup  one_for_one over `acceptors` acceptor processes, spawned
//                  with priority::high (accepting must keep pace on a busy node).
// conns_sup is a worker child with shutdown infinity: it bounds its own stop
// (connection_shutdown per connection, then kill).
//
// The acceptors' start functions carry the listener's accept-side reference
// (see start_listener_sup in listener_sup.hpp): listener_sup holds them in
// its spec of acceptors_sup, acceptors_sup in its own, and each acceptor its
// copy. When the tree ends however it ends — stopped, killed, or giving up
// past its restart intensity — the last of these lets go once no acceptor
// can call accept() any more, and the socket closes with it: a dead
// listener never leaves a port that completes handshakes nobody takes.
#include "listener_sup.hpp"

#include <herd/actors/links.hpp>
#include <herd/actors/logger.hpp>
#include <herd/actors/process.hpp>
#include <herd/actors/receive.hpp>
#include <herd/actors/registry.hpp>
#include <herd/supervisors/supervisor.hpp>

namespace herd::net::detail {

namespace sup = herd::supervisor;

// An acceptor names itself <listener>_acceptor_<n> (as Ranch's are shown).
// Not through the child spec's registered_name: when acceptors_sup is killed,
// its acceptors end by the link signal at their next scheduling, and the
// restarted acceptors_sup may start their successors before that — a name
// still taken made the start fail, each failure counted as a restart, and
// one kill burned listener_sup's whole restart intensity in a millisecond,
// ending the listener. So a successor waits for the holder to end (a few
// seconds at most; then it runs unnamed, and says so). A holder already out
// of the process table answers the monitor with noproc at once, and its name
// is then free to take even before its exit releases it (names.cpp).
void take_name(const std::string& name) {
  for (int waits = 0; waits < 5; ++waits) {
    if (herd::register_name(name, herd::self())) return;
    auto holder = herd::whereis(name);
    if (!holder) continue;  // freed meanwhile: try again
    const monitor_ref m = herd::monitor(*holder);
    herd::receive(herd::when([m](const down& d) { return d.ref == m; }, [](const down&) {}),
                  herd::after(std::chrono::seconds(1), [m] { herd::demonitor(m); }));
  }
  if (!herd::register_name(name, herd::self()))
    herd::log_report("listener acceptor: the name " + name + " is still taken after 5 s; running unnamed");
}

sup::child_spec acceptors_sup_spec(const std::shared_ptr<listener_state>& l, const std::shared_ptr<void>& accept_side) {
  std::vector<sup::child_spec> acceptors;
  for (unsigned i = 0; i < l->opts.acceptors; ++i) {
    acceptors.push_back({.id = "acceptor_" + std::to_string(i),
                         .start = [l, accept_side, name = l->name + "_acceptor_" + std::to_string(i)] {
                           (void)accept_side;  // held for the process's life
                           take_name(name);
                           acceptor_main(l);
                         },
                         .restart = sup::permanent,
                         .shutdown = sup::brutal_kill,
                         .prio = priority::high,
                         .kind = process_kind::acceptor,
                         .initial_call = "herd::net acceptor"});
  }
  return sup::supervisor_spec("acceptors_sup", {.strategy = sup::one_for_one, .intensity = 10, .period = std::chrono::seconds(10)},
                              std::move(acceptors));
}

result<pid> start_listener_sup(const std::shared_ptr<listener_state>& l, std::shared_ptr<void> accept_side) {
  std::vector<sup::child_spec> children;
  children.push_back({.id = "conns_sup",
                      .start = [l] { conns_sup_main(l); },
                      .restart = sup::permanent,
                      .shutdown = herd::infinity,
                      .kind = process_kind::supervisor,
                      .initial_call = "herd::net conns_sup"});
  children.push_back(acceptors_sup_spec(l, accept_side));
  accept_side.reset();  // the specs hold it now
  sup::flags f{.strategy = sup::rest_for_one, .intensity = 10, .period = std::chrono::seconds(10), .name = l->name};
  auto r = sup::start_link(std::move(f), std::move(children));
  if (!r) {
    errc c = r.code() == sup::errc::already_started ? errc::in_use : errc::system;
    return error{c, 0, std::string("starting the listener's supervisor: ") + sup::to_string(r.code()) +
                           (r.error().detail.empty() ? "" : " " + r.error().detail)};
  }
  herd::unlink(*r);  // the tree is linked to nothing
  return *r;
}

}  // namespace herd::net::detail
