// The process control block: a runtime fiber plus a mailbox, an identity and
// an exit state. Allocated through herd::alloc with the spawn function stored
// inline after it.
//
// Who may touch what:
//   fiber fields            — the runtime (see <herd/runtime/fiber.hpp>)
//   mbox.push               — any thread
//   mbox (rest), body, flags, final_reason — the owning process (its fiber),
//                             and the worker that finishes it
//   pending_exit            — any thread sets it once (CAS from nullptr); the
//                             owner reads it at blocking points
//   name                    — the registry (under its lock); read by anyone
//   tracer                  — the observer's trace (trace.cpp); read by senders
// A control block stays readable until a grace period after its pid was
// unpublished from the process table (rt::retire), so a sender that looked it
// up can still push into it; free_process drains what such senders left.
#pragma once
#include <herd/actors/detail/body.hpp>
#include <herd/actors/exit_reason.hpp>
#include <herd/actors/pid.hpp>
#include <herd/runtime/fiber.hpp>
#include <herd/runtime/sched.hpp>

#include "mailbox.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace herd::detail {

struct interned_name;
struct relations;
struct trace_core;

// Layout: the fiber's first cache line holds what every switch touches and
// the `state` every send reads; the process's first line (id, then the
// mailbox's senders' end) what every send touches; the next one the save
// queue, which the owner writes per message taken. What the owner writes or
// reads per message stays off the lines senders use: a receiver draining a
// backlog while other cores send would take those lines back each time.
struct alignas(64) process final : rt::fiber {
  pid id;
  // The observer's trace of this process (trace.hpp), or nullptr: every
  // delivery loads it (acquire — a plain load on x86-64) and does nothing
  // more while it is null. Beside id, so a send touches no extra line.
  std::atomic<trace_core*> tracer{nullptr};
  mailbox mbox;
  body* current_body = nullptr;      // what runs next (spawn's function or a continuation)
  std::atomic<exit_reason*> pending_exit{nullptr};
  exit_reason* final_reason = nullptr;  // set when the fiber ends (heap, owned); nullptr: normal
  std::atomic<interned_name*> name{nullptr};
  uint64_t spawned_ms = 0;
  pid parent;                        // who spawned it (no_pid: a foreign thread); set before start
  uint32_t body_size = 0;
  uint32_t exits_swallowed = 0;      // owner: exit_unwind thrown and caught by user code
  bool is_root = false;              // set before start; the node waits for it
  bool crashed = false;              // owner: an exception escaped its code (reported unless supervised)
  // Written by the owner only; relaxed loads by others (node shutdown, the
  // observer) are hints. (Packed here, in the padding after the bools.)
  std::atomic<bool> trap_exit{false};
  uint64_t exit_first_thrown_ms = 0; // owner: when exit_unwind was first thrown (0: never)
  body* running_body = nullptr;      // owner: the body on the stack now
  relations* rel = nullptr;          // links and monitors (signals.hpp); owner only
  // Run by launch once the pid is allocated, before the process can run
  // (spawn_link / spawn_monitor record the parent's side there).
  void (*on_launch)(void* ctx, pid id) = nullptr;
  void* on_launch_ctx = nullptr;
  // The observer's labels (introspect.hpp), set before the pid is published
  // and never changed: what was spawned (a string with static storage in the
  // host, or nullptr) and a herd::process_kind. They sit in the block's tail
  // padding (it was 328 bytes rounded up to 384): no extra memory.
  const char* initial_call = nullptr;
  uint8_t kind = 0;
  // Which exit watchers want to hear of its end (detail/exit_watch.hpp):
  // set by any thread, read by the worker that finishes it. Beside kind, so
  // both pack into one word with relations_bytes (rt::fiber::compact took the 8 bytes).
  std::atomic<uint8_t> exit_watch{0};
  // The bytes its links and monitors containers hold, republished by the
  // owner at every change of them (relations::publish): relaxed, for the
  // observer's scan, which must not touch `rel`. Also in the tail padding.
  std::atomic<uint32_t> relations_bytes{0};
  // What it says about itself to the observer (introspect::set_protocol,
  // set_out_queue): a protocol label (static storage) and its outbound queue
  // to a peer. Owner stores, relaxed; still in the tail padding.
  std::atomic<const char*> protocol{nullptr};
  std::atomic<uint64_t> out_bytes{0};
  std::atomic<uint32_t> out_frames{0};

  static process* from(rt::fiber* f) noexcept { return static_cast<process*>(f); }
  void* inline_body() noexcept { return reinterpret_cast<char*>(this) + sizeof(process); }
};
// Every field since 328 bytes sits in what alignas(64) would pad anyway:
// a process must not grow (tools/actorbench's bytes_per_actor).
static_assert(sizeof(process) == 384);
// Senders write the line of mbox.in_; the owner writes mbox.save_head and
// mbox.dequeued per message taken. Sharing a line would make a receiver and
// senders on other cores pass it to and fro at every message (fan-in).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
static_assert((offsetof(process, mbox) + offsetof(mailbox, in_)) / 64 !=
                  (offsetof(process, mbox) + offsetof(mailbox, save_head)) / 64 &&
              (offsetof(process, mbox) + offsetof(mailbox, save_head)) / 64 ==
                  (offsetof(process, mbox) + offsetof(mailbox, dequeued)) / 64);
#pragma GCC diagnostic pop

// The process running on this thread, or nullptr. Inline: a send and a
// receive ask it once each; rt::current() is the one call (out of line, so
// that no caller keeps a thread-local address across a switch).
inline process* self_process() noexcept { return static_cast<process*>(rt::current()); }

// The owner: what p's links/monitors containers hold, in bytes
// (introspect.cpp; O(1)).
uint32_t relations_bytes_of(const process* p) noexcept;

// Inside a catch block: the exit reason an exception that ends a process
// gives — its demangled type name and what().
exit_reason reason_of_current_exception();

// The owner: drains, then marks the end of the save queue (receive_after).
void mark_mailbox_of(process* p);

// Acts on a pending exit at a blocking point: throws exit_unwind, unless the
// stack is already unwinding — then returns true ("do not block").
bool act_on_pending_exit(process* p);
// Ends a process whose code keeps swallowing its exit, where it stands.
[[noreturn]] void abandon(process* p);
inline bool exit_pending_at_blocking_point(process* p) {
  // acquire: pairs with the exit signal's CAS (the reason it points to).
  return p->pending_exit.load(std::memory_order_acquire) ? act_on_pending_exit(p) : false;
}

}  // namespace herd::detail
