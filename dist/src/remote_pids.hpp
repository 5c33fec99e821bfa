// The node-wide table of remote pids: each (node, id, serial, creation) seen
// gets one herd::pid with an index from remote_pid_bit up, for the life of
// the OS process (like BEAM's node table it would want a sweep; it has none
// yet — see docs/distribution.md). Node names get small numbers for printing
// (<N.id.serial>). Any thread; a shared lock guards lookups.
#pragma once
#include <herd/actors/message.hpp>
#include <herd/dist/node.hpp>

#include <optional>
#include <string>

namespace herd::dist::detail {

herd::pid intern_remote(const remote_pid& r);
std::optional<remote_pid> lookup_remote(herd::pid p);
std::string format_remote(herd::pid p);
void install_remote_hooks();
// The send hook (dist.cpp): a herd::dist::etf to a remote pid.
bool hook_deliver(herd::pid to, herd::detail::message* m) noexcept;

}  // namespace herd::dist::detail
