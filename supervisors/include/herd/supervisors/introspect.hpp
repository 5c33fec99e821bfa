// The supervision tree as the observer sees it: which supervisors are alive
// (a registry each supervisor joins after its init and leaves when it ends)
// and what each supervises (asked of the supervisor itself, with a timeout).
//
// Why ask rather than publish: a supervisor's children change only inside
// the supervisor process; keeping a locked copy up to date would cost every
// start and exit of every child (10,000s a second under a connection
// supervisor) for a view that is rarely taken. A call costs nothing until
// someone looks, and it is answered between two of the supervisor's
// messages, so it never races its state. A supervisor busy stopping or
// restarting children answers late: the caller says so (busy).
#pragma once
#include <herd/actors/pid.hpp>
#include <herd/supervisors/child_spec.hpp>
#include <herd/supervisors/flags.hpp>
#include <herd/supervisors/result.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace herd::supervisor {

const char* to_string(restart_type r) noexcept;
const char* to_string(child_type t) noexcept;

struct registered_supervisor {
  pid self;
  pid parent;  // who spawned it (its own supervisor, when it has one)
  restart_strategy strategy = restart_strategy::one_for_one;
  unsigned intensity = 0;
  std::chrono::milliseconds period{0};
};

// Any thread. Every supervisor that has finished its init and not ended
// (one that could not unwind may linger until its pid is seen dead).
std::vector<registered_supervisor> live_supervisors();

struct tree_child {
  std::optional<std::string> id;  // nullopt: a simple_one_for_one child
  pid child;                      // no_pid: not running (restarting, stopped)
  child_type type = child_type::worker;
  restart_type restart = restart_type::permanent;
};

struct tree_children {
  std::vector<tree_child> children;  // in start order, at most `max`
  std::size_t more = 0;              // children left out past `max`
};

// From a process (elsewhere: herd::not_in_process). Asks `sup` for its
// children (at most `max` listed): errc::timeout when it did not answer
// within `timeout`, errc::not_found when it is gone.
result<tree_children> children_of(pid sup, std::size_t max, std::chrono::milliseconds timeout);

}  // namespace herd::supervisor
