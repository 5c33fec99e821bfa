// The node-wide table of remote pids: each (node, id, serial, creation) seen
// gets one herd::pid — an index from remote_pid_bit up and that slot's
// generation — so one remote process always has the same herd::pid while
// its entry lives. Entries go (sweep_remote_pids) when the connection to
// their node ends, and those of nodes with no connection once a sweep finds
// them unused since the previous sweep; a slot is then reused under the next
// generation, so a pid kept past its entry names nobody (a send to it is
// dropped, describe() says nullopt) and never another process. Node names
// get small numbers (<N.id.serial>, etf_message::origin) in records, with
// the connection's atom budget (term_node.hpp) and pid cap; a record lives
// while a connection to its node runs (pin_node), a live entry names the
// node or one is charged to it, and its number is then reused. Any thread;
// a shared lock guards lookups.
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

// The node's number here while it has a record (0: none, or an empty
// name). A connection holds its node's record from pin_node (which makes
// it) to unpin_node; the record then goes with the last entry naming the
// node or charged to it.
uint32_t node_number(std::string_view node);
uint32_t pin_node(std::string_view node);
void unpin_node(uint32_t node_no) noexcept;
// The atom budget of the connection to the node (its record's: never freed,
// reused with the number; nullptr for 0 or an unknown number).
herd::detail::atom_budget* node_atom_budget(uint32_t node_no) noexcept;
std::string node_name_of(uint32_t node_no);

// The remote pids one connection's frames make this node hold: an entry
// made while a pid_charge_scope for the connection's node is open on the
// thread counts against that node's cap until it goes; past the cap the pid
// is refused (no_pid) and the budget marked spent. The scope must not span
// a suspension or a send (a send may yield, and the fiber resume on another
// thread): a thread-local.
class pid_charge_scope {
 public:
  explicit pid_charge_scope(uint32_t node_no) noexcept;
  ~pid_charge_scope();
  pid_charge_scope(const pid_charge_scope&) = delete;
  pid_charge_scope& operator=(const pid_charge_scope&) = delete;

 private:
  uint32_t prev_;
};
// A connection to the node starts: its cap (0: none), a refusal forgotten.
void reset_pid_budget(uint32_t node_no, uint32_t cap) noexcept;
// True once a pid was refused for the cap since the reset.
bool pid_budget_spent(uint32_t node_no) noexcept;
// True when the thread's open pid_charge_scope's budget is spent.
bool charge_refused() noexcept;
// True once per reset, for the caller that is to close the connection
// after a refusal outside the connection's own frames (a payload's pids).
bool pid_budget_tell(uint32_t node_no) noexcept;
// The node the thread's open pid_charge_scope charges (0: none), and the
// scope by hand (etf_message::pid_charge): returns the previous one.
uint32_t pid_charge_of_thread() noexcept;
uint32_t swap_pid_charge(uint32_t node_no) noexcept;
// The entries charged to the node's connections that still live.
std::size_t pids_held_by(uint32_t node_no) noexcept;

// Drops every entry of `ended` (a node whose connection just ended; "" for
// none) and the entries of other unconnected nodes (not in `connected`,
// sorted) that nobody interned since the previous sweep. Returns how many went.
std::size_t sweep_remote_pids(std::string_view ended, const std::vector<std::string>& connected);
// The sweep the table runs itself when it has grown (remote_pids.cpp):
// connection.cpp's, with every node that has a connection (or is getting
// one) counted as connected. Takes the distribution's lock: call with no
// lock of the table held.
void sweep_unconnected() noexcept;
// Live entries (for tests and the observer).
std::size_t remote_pid_count();
// Node records held (those of connections, and those a live entry names
// or is charged to).
std::size_t node_record_count();

}  // namespace herd::dist::detail
