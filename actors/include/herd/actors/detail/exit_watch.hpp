// How a layer above actors learns that a process ended, without a monitor
// per process and without a cost for processes it does not care about: the
// tables layer deletes (or hands to the heir) the tables a process owns.
//
// A layer registers one watcher function at start-up and marks the processes
// it keeps state for. When a marked process ends, the worker that finishes it
// calls the watcher — after its pid is unpublished and its name released,
// before its links and monitors fire, so a DOWN never arrives while a dead
// owner's table still answers (BEAM deletes a process's tables before its
// links and monitors are signalled).
//
// Ordering: watch_exit sets the mark (seq_cst RMW) and then looks the pid up
// (seq_cst); the finishing worker unpublishes the pid (seq_cst store) and then
// reads the marks (seq_cst). So at least one of them sees the other: either
// the worker calls the watcher, or watch_exit returns false and the caller
// cleans up itself — or both, so a watcher must be idempotent.
#pragma once
#include <herd/actors/exit_reason.hpp>
#include <herd/actors/pid.hpp>

namespace herd::detail {

using exit_watcher = void (*)(pid who, const exit_reason& why) noexcept;

// Any thread; once per watcher, before the first watch_exit. Returns the
// watcher's slot (0..7); aborts past eight (a programming error).
unsigned register_exit_watcher(exit_watcher fn);

// Any thread. Marks p for the watcher in `slot`. False when p is not alive
// (never was, or has ended, perhaps while this call ran): the caller treats
// it as ended.
bool watch_exit(pid p, unsigned slot);

}  // namespace herd::detail
