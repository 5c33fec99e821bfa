// Supervisors, as OTP's `supervisor`: a process that starts children, watches
// them through links, restarts them by a strategy, and gives up — exiting
// with `shutdown` so that its own supervisor decides — when they crash more
// often than its intensity allows.
//
//   namespace sup = herd::supervisor;
//   sup::result<herd::pid> top = sup::start_link({.strategy = sup::one_for_one}, {
//       {.id = "db", .start = [] { db_loop(); }},
//       sup::supervisor_spec("conns", {.strategy = sup::simple_one_for_one},
//                            {{.id = "conn", .start = [](int fd) { serve(fd); }, .restart = sup::temporary}}),
//   });
//   if (!top) log(top.error().message());               // e.g. "start_failed: ..."
//   if (auto c = sup::start_child(conns_pid, 7); !c)    // a dynamic child: serve(7)
//     log(c.error().message());
//
// Children start in order and stop in reverse order; a nested supervisor is
// waited for until its own children are up, so start_link returns with the
// whole tree started. Stopping a child:
// monitor it, unlink it, exit(child, shutdown), wait for its `down` up to its
// shutdown timeout, then exit(child, kill). herd cannot unwind a process that
// never reaches a blocking point (docs/erlang-differences.md): if even `kill`
// has not ended it after flags::kill_report_after, the supervisor reports
// "kill pending" (pid, name, ms) through the logger and keeps waiting — it
// never restarts a child whose previous instance is still alive.
//
// A supervisor traps exits. It stops (children first, in reverse order) when
// its parent exits (any reason), or on an exit signal with a reason other
// than `normal` from any process that is not one of its children — so
// exit(sup, shutdown) stops it from anywhere (in OTP only the parent's exit
// does). Crash reports, shutdown errors, "kill pending" and give-ups go to
// herd's logger (<herd/actors/logger.hpp>).
//
// Every function below is for code running in a process (it calls the
// supervisor with herd::call and waits without a timeout, as OTP does; the
// call monitors the supervisor, so one that dies ends the wait); from
// anywhere else each throws herd::not_in_process naming itself, and
// supervisor_spec, which only builds a spec, works anywhere. A
// supervisor that is gone makes these throw herd::call_error.
#pragma once
#include <herd/actors/exit_reason.hpp>
#include <herd/actors/pid.hpp>
#include <herd/supervisors/child_spec.hpp>
#include <herd/supervisors/flags.hpp>
#include <herd/supervisors/result.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace herd::supervisor {

// Spawns a supervisor linked to the caller and starts its children, in order.
// Returns its pid once every child has started; if one cannot be started,
// those already started are stopped and the error is returned (the
// supervisor unlinks first, so the caller is not taken down with it).
result<pid> start_link(flags f, std::vector<child_spec> children);

// Makes the calling process a supervisor (the start function of a
// supervisor child; see supervisor_spec). Never returns: the process ends
// when the supervisor stops. A child that cannot be started ends it with
// {shutdown, failed_to_start_child ...}.
[[noreturn]] void run(flags f, std::vector<child_spec> children);

// A child spec for a nested supervisor: type supervisor, shutdown infinity.
child_spec supervisor_spec(std::string id, flags f, std::vector<child_spec> children,
                           restart_type restart = restart_type::permanent);

// Adds a child spec and starts it (not for simple_one_for_one: errc::bad_args).
result<pid> start_child(pid sup, child_spec spec);
// simple_one_for_one: starts a child of the supervisor's one spec with these
// extra arguments (they must match the start function's parameters).
result<pid> start_child(pid sup, child_args args);
namespace detail {
template <class... A>
inline constexpr bool plain_args =
    sizeof...(A) != 1 || ((!std::is_same_v<std::decay_t<A>, child_spec> && !std::is_same_v<std::decay_t<A>, child_args>) && ...);
}
template <class... A>
  requires detail::plain_args<A...>
result<pid> start_child(pid sup, A&&... args) {
  return start_child(sup, child_args::of(std::forward<A>(args)...));
}

// Stops a child (by id; by pid too, which simple_one_for_one requires). Its
// spec stays (restart_child starts it again) unless it is temporary or the
// supervisor is simple_one_for_one. A child that is not running: ok.
result<> terminate_child(pid sup, std::string_view id);
result<> terminate_child(pid sup, pid child);
// Starts a stopped child again. Not for simple_one_for_one.
result<pid> restart_child(pid sup, std::string_view id);
// Removes a stopped child's spec. Not for simple_one_for_one.
result<> delete_child(pid sup, std::string_view id);

struct child_info {
  std::string id;                 // empty for simple_one_for_one children (OTP: undefined)
  herd::pid pid = herd::no_pid;   // no_pid: not running
  child_type type = child_type::worker;
  bool restarting = false;        // waiting for another restart attempt
};
// In start order.
std::vector<child_info> which_children(pid sup);

struct child_counts {
  std::size_t specs = 0;        // child specs (1 for simple_one_for_one)
  std::size_t active = 0;       // children running
  std::size_t supervisors = 0;  // specs (or dynamic children) of type supervisor, running or not
  std::size_t workers = 0;      // ... of type worker
};
child_counts count_children(pid sup);

// exit(sup, reason), then waits until it has ended (after its children).
// Returns its exit reason (noproc if it was already gone), or errc::timeout
// if it is still alive after `timeout` (it goes on stopping).
result<exit_reason> stop(pid sup, exit_reason reason = exit_reason::shutdown(),
                                std::chrono::milliseconds timeout = herd::infinity);

}  // namespace herd::supervisor
