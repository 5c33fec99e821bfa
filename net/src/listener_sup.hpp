#pragma once
#include "listener_state.hpp"

#include <herd/actors/pid.hpp>
#include <herd/net/result.hpp>

#include <memory>

namespace herd::net::detail {
// From a process: starts the tree for `l` (registered under l->name),
// unlinked from the caller.
result<pid> start_listener_sup(const std::shared_ptr<listener_state>& l);
}  // namespace herd::net::detail
