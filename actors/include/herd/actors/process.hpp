// What a process can ask about and do to itself. All of these are for code
// running in a process unless a line says otherwise.
#pragma once
#include <herd/actors/exit_reason.hpp>
#include <herd/actors/pid.hpp>
#include <herd/runtime/blocking.hpp>

#include <chrono>
#include <string>
#include <utility>

namespace herd {

namespace detail {
// Thrown at a blocking point to unwind a process that must exit. Deliberately
// not a std::exception; if user code swallows it, it is thrown again at every
// later blocking point and the exit reason stays what it was.
struct exit_unwind {};
void check_exit_after_blocking();
// From a process, at a blocking point of a lower layer (a socket's recv or
// send): drains the mailbox (signals are acted on) and throws exit_unwind if
// an exit is pending. Returns true when the caller must not block — the
// stack is already unwinding for an exit (a destructor that sends).
bool blocking_point();
}  // namespace detail

// This process's pid; no_pid outside a process (any thread).
pid self() noexcept;

// The process that spawned this one (proc_lib's parent): no_pid for the root,
// for a process spawned from a foreign thread, and outside a process. A
// supervisor's children get their supervisor. It may have exited since.
pid parent() noexcept;

// Ends this process with `reason`: the stack unwinds (destructors run) and the
// reason is what links and monitors will see. Never returns.
[[noreturn]] void exit(exit_reason reason);

// Ends another process: it unwinds at its next blocking point (receive, sleep,
// yield, hibernate, the return of blocking()). Any thread. The full Erlang
// rules for exit signals (trap_exit, links) come with links and monitors.
void exit(pid target, exit_reason reason);

// Gives the worker to others; a blocking point.
void yield();

// Sleeps; messages that arrive meanwhile stay in the mailbox. A blocking point.
void sleep(std::chrono::milliseconds d);

// Runs fn on the blocking pool and parks this process until it returns; its
// return is a blocking point. Outside a process fn runs inline.
template <class F>
auto blocking(F&& fn) -> decltype(rt::blocking(std::forward<F>(fn))) {
  if constexpr (std::is_void_v<decltype(rt::blocking(std::forward<F>(fn)))>) {
    rt::blocking(std::forward<F>(fn));
    detail::check_exit_after_blocking();
  } else {
    auto r = rt::blocking(std::forward<F>(fn));
    detail::check_exit_after_blocking();
    return r;
  }
}

// Messages waiting in this process's mailbox (any thread may ask about any
// process with process_info later; this one is exact for the caller).
std::size_t mailbox_size() noexcept;

}  // namespace herd
