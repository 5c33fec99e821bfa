#pragma once
#include "listener_state.hpp"

#include <herd/actors/pid.hpp>
#include <herd/net/result.hpp>

#include <memory>

namespace herd::net::detail {
// From a process: starts the tree for `l` (registered under l->name),
// unlinked from the caller. `accept_side` is held by the processes that use
// the listening socket — listener_sup, acceptors_sup and the acceptors (in
// their child specs) — and by nothing else: its deleter, run when the last
// of them has ended, closes the socket and unregisters the listener.
result<pid> start_listener_sup(const std::shared_ptr<listener_state>& l, std::shared_ptr<void> accept_side);
}  // namespace herd::net::detail
