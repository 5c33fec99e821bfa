// What a process can ask about and do to itself. All of these are for code
// running in a process unless a line says otherwise.
//
// The rule for calls made outside a process (README "Calls made outside a
// process"): a call that acts as the calling process (receive, link, call,
// exit(reason), sleep, ...) throws not_in_process there, whether a node runs
// or not; a query about the calling process (self, parent, in_process,
// trapping_exits, mailbox_size) answers "none" (no_pid, false, 0).
#pragma once
#include <herd/actors/exit_reason.hpp>
#include <herd/actors/pid.hpp>
#include <herd/runtime/blocking.hpp>

#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>

namespace herd {

// Thrown by a call that only a process can make, made from anywhere else (main,
// a std::thread, a thread of another library), with or without a running node.
// what() starts with the call's name as the docs spell it, e.g. "herd::receive:
// called outside a herd process (on thread 'main'); run this code in a process
// started by herd::node::run or herd::spawn". A logic_error: it is a bug in the
// caller, never a condition of normal operation.
class not_in_process : public std::logic_error {
 public:
  // call: a string literal naming the call ("herd::receive").
  explicit not_in_process(const char* call);
  const char* call() const noexcept { return call_; }

 private:
  const char* call_;
};

// Any thread: true when this code runs in a herd process.
bool in_process() noexcept;

namespace detail {
struct process;
// The one check every process-only call makes first: the calling process, or
// not_in_process naming `call` (a string literal) when there is none.
process* require_process(const char* call);
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

// This process's pid; no_pid outside a process (any thread: a query).
pid self() noexcept;

// The process that spawned this one (proc_lib's parent): no_pid for the root,
// for a process spawned from a foreign thread, and outside a process. A
// supervisor's children get their supervisor. It may have exited since.
pid parent() noexcept;

// Ends this process with `reason`: the stack unwinds (destructors run) and the
// reason is what links and monitors will see. Never returns. Outside a
// process: throws not_in_process (it never ends the thread).
[[noreturn]] void exit(exit_reason reason);

// Ends another process: it unwinds at its next blocking point (receive, sleep,
// yield, hibernate, the return of blocking()). Any thread. The full Erlang
// rules for exit signals (trap_exit, links) come with links and monitors.
void exit(pid target, exit_reason reason);

// Gives the worker to others; a blocking point. Outside a process: throws
// not_in_process (use std::this_thread::yield there).
void yield();

// Sleeps; messages that arrive meanwhile stay in the mailbox. A blocking point.
// Outside a process: throws not_in_process (use std::this_thread::sleep_for).
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
// process with process_info later; this one is exact for the caller). A
// query: 0 outside a process.
std::size_t mailbox_size() noexcept;

}  // namespace herd
