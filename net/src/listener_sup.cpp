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

#include <herd/supervisors/supervisor.hpp>

namespace herd::net::detail {

namespace sup = herd::supervisor;

sup::child_spec acceptors_sup_spec(const std::shared_ptr<listener_state>& l, const std::shared_ptr<void>& accept_side) {
  std::vector<sup::child_spec> acceptors;
  for (unsigned i = 0; i < l->opts.acceptors; ++i) {
    acceptors.push_back({.id = "acceptor_" + std::to_string(i),
                         .start = [l, accept_side] {
                           (void)accept_side;  // held for the process's life
                           acceptor_main(l);
                         },
                         .restart = sup::permanent,
                         .shutdown = sup::brutal_kill,
                         // Named as Ranch's acceptors are shown: <listener>_acceptor_<n>.
                         .registered_name = l->name + "_acceptor_" + std::to_string(i),
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
