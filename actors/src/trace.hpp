// A trace of one process (introspect::tracer's shared half). Senders record
// into it from any thread; the observer takes the events from its own thread.
//
// Lifetime: the process points to it through process::tracer. Detaching
// clears that pointer (CAS, so only the tracer's own core is cleared) and
// then retires the core (rt::retire): a sender that loaded the pointer before
// the clear is inside a read section (a worker between quiescent points, or
// a foreign thread under foreign_read_guard), so the core outlives it. A
// process that ends takes the pointer back itself (exchange) and reports
// `exited` into the core.
//
// Everything mutable is under `m`: recording is rare (only while traced) and
// several senders may record at once. `end` is also read without the lock by
// the observer (relaxed: a hint; take() re-reads under the lock).
#pragma once
#include <herd/runtime/thread_safety.hpp>
#include <herd/actors/introspect.hpp>
#include <herd/actors/message.hpp>

#include "process.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace herd::detail {

struct trace_core {
  explicit trace_core(uint64_t start_ms) : window_start_ms(start_ms) {}

  pid target;
  uint32_t limit = 0;
  int notify_fd = -1;

  herd::rt::mutex m;
  std::vector<introspect::trace_event> events HERD_GUARDED_BY(m);  // not yet taken
  uint64_t recorded HERD_GUARDED_BY(m) = 0;
  uint64_t window_start_ms HERD_GUARDED_BY(m) = 0;
  uint32_t window_count HERD_GUARDED_BY(m) = 0;
  std::string exit_reason HERD_GUARDED_BY(m);
  std::atomic<introspect::trace_end> end{introspect::trace_end::none};

  // Any thread, under m: records e (or ends the trace at its limit or rate).
  void record_locked(introspect::trace_event&& e, uint64_t now_ms) HERD_REQUIRES(m);
  // Under m: ends the trace (first reason wins) and wakes the observer.
  void finish_locked(introspect::trace_end why) HERD_REQUIRES(m);
  void notify() noexcept;
};

// Out of line: builds the event for m (a message or a signal) delivered to p.
void trace_message(trace_core* t, const message* m, pid from) noexcept;
// The worker finishing p: ends its trace, if any, with `exited`.
void trace_exit(process* p, const exit_reason& why) noexcept;

// Any thread, before m is pushed into p's mailbox (after the push the owner
// may already have consumed it). from: the sender, or no_pid.
inline void trace_delivery(process* p, const message* m, pid from) noexcept {
  // acquire: pairs with the release CAS that attached the core (its fields).
  if (trace_core* t = p->tracer.load(std::memory_order_acquire)) [[unlikely]]
    trace_message(t, m, from);
}

}  // namespace herd::detail
