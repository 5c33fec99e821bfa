// The node-wide table of remote pids: each (node, id, serial, creation) seen
// gets one herd::pid — an index from remote_pid_bit up and that slot's
// generation — so one remote process always has the same herd::pid while
// its entry lives. Entries go (sweep_remote_pids) when the connection to
// their node ends, and those of nodes with no connection once a sweep finds
// them unused since the previous sweep; a slot is then reused under the next
// generation, so a pid kept past its entry names nobody (a send to it is
// dropped, describe() says nullopt) and never another process. Node names
// get small numbers for printing (<N.id.serial>), kept for the OS process's
// life with the node's atom budget (term_node.hpp). Any thread; a shared
// lock guards lookups.
#pragma once
#include <herd/actors/message.hpp>
#include <herd/dist/node.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace herd::detail {
struct atom_budget;
}

namespace herd::dist::detail {

herd::pid intern_remote(const remote_pid& r);
std::optional<remote_pid> lookup_remote(herd::pid p);
std::string format_remote(herd::pid p);
void install_remote_hooks();
// The send hook (dist.cpp): a herd::dist::etf to a remote pid.
bool hook_deliver(herd::pid to, herd::detail::message* m) noexcept;

// The node's number here (made on first use; 0 for an empty name), and the
// atom budget of the connection to it (never freed; nullptr for 0 or an
// unknown number).
uint32_t node_number(std::string_view node);
herd::detail::atom_budget* node_atom_budget(uint32_t node_no) noexcept;
std::string node_name_of(uint32_t node_no);

// Drops every entry of `ended` (a node whose connection just ended; "" for
// none) and the entries of other unconnected nodes (not in `connected`,
// sorted) that nobody interned since the previous sweep. Returns how many went.
std::size_t sweep_remote_pids(std::string_view ended, const std::vector<std::string>& connected);
// Live entries (for tests and the observer).
std::size_t remote_pid_count();

}  // namespace herd::dist::detail
