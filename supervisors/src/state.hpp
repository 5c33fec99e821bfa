// A supervisor's state and the functions that act on it, by concern:
//   supervisor.cpp  the process: init, the receive loop, stopping
//   children.cpp    starting a child, finding children, the call handlers
//   strategy.cpp    what an exit means: restart decisions and strategies
//   dynamic_children.cpp  simple_one_for_one: start_child(args), exits, retries
//   shutdown.cpp    stopping children (one, a range in reverse, dynamic ones at once)
//   reports.cpp     crash reports through the logger
// All of it runs in the supervisor process only.
#pragma once
#include <herd/actors/exit_reason.hpp>
#include <herd/actors/pid.hpp>
#include <herd/supervisors/supervisor.hpp>

#include "restart_intensity.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace herd::supervisor::detail {

struct child {
  uint64_t key = 0;                        // unique in this supervisor (retries name it)
  std::shared_ptr<const child_spec> spec;  // dynamic children share the template
  child_args args;                         // simple_one_for_one: start_child's arguments
  pid id = no_pid;                         // no_pid: not running
  bool restarting = false;                 // a failed restart waits for its retry
  std::string label;                       // "<pid> (registered name)" at its start

  bool running() const noexcept { return id.valid(); }
  bool is_temporary() const noexcept { return spec->restart == restart_type::temporary; }
};

struct state {
  state(flags f, pid parent_pid);

  flags fl;
  pid self;
  pid parent;           // start_link's caller; no_pid when started by run()
  std::string label;    // "<pid> (name)"
  restart_intensity restarts;
  uint64_t next_key = 1;

  // one_for_one, one_for_all, rest_for_one: the children in start order.
  std::vector<child> children;

  // simple_one_for_one: one template spec, children by pid, and those
  // waiting for a restart retry (no pid) by key.
  std::shared_ptr<const child_spec> dyn_spec;
  std::unordered_map<pid, child> dynamic;
  std::unordered_map<uint64_t, child> dyn_waiting;

  bool simple() const noexcept { return fl.strategy == restart_strategy::simple_one_for_one; }
  child* find(pid p);                    // a running child
  std::ptrdiff_t index_of(pid p) const;  // static children
  std::ptrdiff_t index_of(std::string_view id) const;
  std::ptrdiff_t index_of_key(uint64_t key) const;
};

// ---- supervisor.cpp
// The supervisor process (start_link's ack: tell `parent` how init went).
[[noreturn]] void serve(flags f, std::vector<child_spec> specs, pid parent, bool ack);
// True (and the reason) when a queued exit_msg asks the supervisor to stop.
bool stop_requested(state& s, exit_reason& why);

// ---- children.cpp
enum class early_exit : uint8_t { keep, fail };
// Spawns c linked to the supervisor. A child of type supervisor is then
// waited for until its own children have started (OTP's synchronous start:
// when start_link returns, the whole tree is up). Returns an error text when
// no process could be created — or, with early_exit::fail, when a supervisor
// child ended during its start (its exit_msg is taken). With early_exit::keep
// such a child counts as started: its exit_msg comes next, as a crash.
std::optional<std::string> start_one(state& s, child& c, early_exit e = early_exit::keep);
// Starts children[from..] in order; on a failure marks that child
// restarting, leaves the rest stopped, and returns its index.
std::optional<std::size_t> start_from(state& s, std::size_t from);
supervisor::error fail(errc e, std::string detail = {}, pid p = no_pid);
result<pid> handle_start_spec(state& s, child_spec spec);
result<> handle_terminate(state& s, const std::string& id, pid child);
result<pid> handle_restart(state& s, const std::string& id);
result<> handle_delete(state& s, const std::string& id);
std::vector<child_info> handle_which(const state& s);
// A simple_one_for_one supervisor's children (running and waiting to
// restart) in start order: OTP leaves it unspecified; keys grow with each
// start_child.
std::vector<const child*> dynamic_in_start_order(const state& s);
child_counts handle_count(const state& s);

// ---- strategy.cpp
// A running child ended (its exit_msg arrived).
void child_exited(state& s, pid who, exit_reason reason);
// A failed restart's retry came due.
void retry_restart(state& s, uint64_t key);
bool normal_exit(const exit_reason& r);  // normal or shutdown{...}
bool wants_restart(const child& c, const exit_reason& r);
// Before a restart: stops the supervisor instead when a stop request is
// queued (stop_requested), or when this restart is one too many (invariant 4).
void check_restart_allowed(state& s, const child& c, std::string_view label, std::string_view event);

// ---- dynamic_children.cpp (simple_one_for_one)
result<pid> handle_start_args(state& s, child_args args);
result<> dynamic_terminate(state& s, pid child);
void dynamic_child_exited(state& s, pid who, exit_reason reason);
void dynamic_retry(state& s, uint64_t key);

// ---- shutdown.cpp
// Stops a running child as its shutdown spec says and returns its exit reason.
exit_reason terminate_one(state& s, child& c);
// Stops the running static children at [from, end) in reverse start order and
// drops the temporary ones (they are never restarted).
void terminate_from(state& s, std::size_t from);
// Stops every dynamic child at once (OTP: in parallel), sharing one timeout.
void terminate_dynamic(state& s);
// Stops every child (reverse order) and exits with `reason`.
[[noreturn]] void shut_down(state& s, exit_reason reason);

// ---- reports.cpp
// `label`: the child's "<pid> (name)" as it was (empty: no process);
// `event`: "exited: killed", "could not be started", ...
void report_event(const state& s, const child& c, std::string_view label, std::string_view event,
                  std::string_view decision);
void report_shutdown_error(const state& s, const child& c, const exit_reason& r);
void report_kill_pending(const state& s, const child& c, uint64_t ms);
void report_start_error(const state& s, const child& c, std::string_view why);
// A message the supervisor has no use for (OTP logs and drops it too).
void report_unexpected(const state& s, std::string_view type_name);
void report_give_up(const state& s, const child& c, std::string_view label, std::string_view event);
std::string child_name(const state& s, const child& c);  // "\"id\"", or "(dynamic) \"id\""

}  // namespace herd::supervisor::detail
