// Links, monitors and trapping exits, as in Erlang.
//
//  * A link is bidirectional: when either process ends, the other gets an exit
//    signal carrying its reason. `normal` is ignored by a process that does not
//    trap exits; any other reason ends it too (with the same reason). A process
//    that traps exits gets an `exit_msg{from, reason}` message instead.
//  * exit(pid, kill) cannot be trapped: the target ends with `killed`, and its
//    links see `killed` (which they can trap).
//  * A monitor is one-way and stackable: when the target ends, the watcher gets
//    `down{ref, pid, reason}`; a monitor on a dead or unknown pid delivers
//    `down{..., noproc}` at once. After demonitor, no `down` for that ref is
//    ever received (one already queued is dropped when it is reached).
//  * Signals and messages from one sender to one receiver arrive in order.
//    Links and monitors change only on their owner; others send it signals,
//    which it acts on at its blocking points (receive, sleep, yield, ...).
//  * With herd::dist running, all of this works for a pid on another node
//    too (docs/distribution.md): when the connection to that node goes down,
//    each link to a process there becomes an exit signal and each monitor a
//    `down`, both with reason noconnection.
// All of these are for code running in a process: from anywhere else they
// throw not_in_process (trapping_exits, a query, answers false).
// spawn_link and spawn_monitor too: the caller holds the link's or the
// monitor's other end (plain spawn works from any thread).
#pragma once
#include <herd/actors/exit_reason.hpp>
#include <herd/actors/pid.hpp>
#include <herd/actors/process.hpp>
#include <herd/actors/spawn.hpp>

#include <compare>
#include <cstdint>
#include <string_view>
#include <utility>

namespace herd {

// What a process that traps exits receives instead of dying.
struct exit_msg {
  pid from;  // no_pid: sent from outside any process (e.g. the node shutting down)
  exit_reason reason;
};

struct monitor_ref {
  uint64_t id = 0;
  explicit operator bool() const noexcept { return id != 0; }
  friend auto operator<=>(const monitor_ref&, const monitor_ref&) = default;
};

// What a watcher receives when the process it monitors ends.
struct down {
  monitor_ref ref;
  pid who;
  exit_reason reason;
};

// Links to p. A dead or unknown p sends this process an exit signal with
// reason noproc (which ends it unless it traps exits).
void link(pid p);
// Removes a link (both directions); no exit signal from it arrives afterwards.
void unlink(pid p);
// Sets this process's trap_exit flag; returns the previous value.
bool trap_exit(bool on);
bool trapping_exits() noexcept;

monitor_ref monitor(pid p);
// By registered name, as OTP's monitor(process, Name): monitors the process
// registered under it now (the name is not followed to a later holder); when
// none is, down{ref, no_pid, noproc} arrives at once.
monitor_ref monitor(std::string_view name);
// By {name, node}, as OTP's monitor(process, {Name, Node}): the process
// registered as `name` on `node` (this node's name: as monitor(name)). Its
// `down` has who == no_pid (Erlang names {Name, Node} there) and the
// reason: noproc when nothing is registered under the name there,
// noconnection when the node cannot be reached or the connection goes down.
monitor_ref monitor(std::string_view name, std::string_view node);
// True if the monitor was active. Any `down` for it is dropped from now on.
bool demonitor(monitor_ref r);

namespace detail {
// Links the child before it first runs (spawn_link) / monitors it (spawn_monitor).
struct spawn_relation {
  enum kind_t : uint8_t { none, link, monitor } kind = none;
  monitor_ref ref;
};
pid launch_related(process* p, const spawn_options& o, spawn_relation rel);
monitor_ref new_ref() noexcept;

template <class F, class... Args>
pid spawn_with(const spawn_options& o, spawn_relation rel, F&& fn, Args&&... args) {
  // Checked before the process is made: nothing to undo.
  require_process(rel.kind == spawn_relation::link ? "herd::spawn_link" : "herd::spawn_monitor");
  process* p = make_process(std::forward<F>(fn), std::forward<Args>(args)...);
  set_labels(p, labels_for<F>(o), o.kind);
  return launch_related(p, o, rel);
}
}  // namespace detail

// spawn + link, atomically: the child is linked before it runs.
template <class F, class... Args>
pid spawn_link(const spawn_options& o, F&& fn, Args&&... args) {
  return detail::spawn_with(o, detail::spawn_relation{detail::spawn_relation::link, {}}, std::forward<F>(fn),
                    std::forward<Args>(args)...);
}
template <class F, class... Args>
  requires(!std::is_same_v<std::decay_t<F>, spawn_options>)
pid spawn_link(F&& fn, Args&&... args) {
  return spawn_link(spawn_options{}, std::forward<F>(fn), std::forward<Args>(args)...);
}

// spawn + monitor, atomically.
template <class F, class... Args>
std::pair<pid, monitor_ref> spawn_monitor(const spawn_options& o, F&& fn, Args&&... args) {
  detail::spawn_relation rel{detail::spawn_relation::monitor, detail::new_ref()};
  pid p = detail::spawn_with(o, rel, std::forward<F>(fn), std::forward<Args>(args)...);
  return {p, rel.ref};
}
template <class F, class... Args>
  requires(!std::is_same_v<std::decay_t<F>, spawn_options>)
std::pair<pid, monitor_ref> spawn_monitor(F&& fn, Args&&... args) {
  return spawn_monitor(spawn_options{}, std::forward<F>(fn), std::forward<Args>(args)...);
}

}  // namespace herd
