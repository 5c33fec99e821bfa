// Snapshots of a running node's processes, for the observer (herd::observer)
// and tests: what BEAM's process_info / erlang:processes / dbg give.
//
// Nothing here stops the world. The process table is scanned reading relaxed
// atomic fields of each control block (status, mailbox counters, reductions,
// stack depth), so a row is a hint that may be a moment old. Links, monitors
// and trap_exit belong to the process alone: ask_relations sends it a signal
// that it answers at its next drain (a receive), and gives up after a wait.
//
// Who may call what is said per function. "A plain thread" means any thread
// that is not a herd worker: these calls scan the whole table or wait, which
// a worker must never do (run them on the blocking pool, or on a thread of
// your own as the observer does).
#pragma once
#include <herd/actors/pid.hpp>
#include <herd/actors/spawn.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace herd::detail {
struct trace_core;
}

namespace herd::introspect {

enum class status : uint8_t {
  running,     // on a worker now
  runnable,    // in a run queue
  waiting,     // parked in receive (or sleep)
  hibernated,  // waiting, stack released
  exiting,     // an exit is pending, or it has ended and is being cleaned up
};
const char* to_string(status s) noexcept;
std::optional<status> status_from(std::string_view s) noexcept;

const char* to_string(process_kind k) noexcept;
std::optional<process_kind> kind_from(std::string_view s) noexcept;

struct process_row {
  pid id;
  std::string name;          // registered name; empty: none
  // What was spawned: spawn_options::initial_call, or the spawned function's
  // C++ type ("main()::<lambda()>"); empty: not known (spawned by module
  // code, or the node's root).
  std::string initial_call;
  process_kind kind = process_kind::worker;
  status state = status::waiting;
  uint64_t mailbox = 0;      // messages waiting (enqueued - taken)
  uint64_t reductions = 0;
  // What the runtime knows the process holds: its stack's touched pages +
  // mailbox bytes (estimated here: mailbox x mailbox_message_estimate) +
  // control block (with the spawned function inline) + its links/monitors
  // containers (as it last published them, before its last park). Heap owned
  // by user objects (what a process's variables point to) is not counted:
  // herd cannot see it. process_info + ask_relations give the exact parts.
  uint64_t memory = 0;
  uint64_t age_ms = 0;
  bool hibernated = false;
  // Reductions since process_query::since was taken (all of them for a
  // process not in it, or when the query had no `since`).
  uint64_t reductions_delta = 0;
  // What the process said about itself (set_protocol, set_out_queue): empty
  // and 0 when it said nothing.
  std::string protocol;
  uint64_t out_frames = 0;
  uint64_t out_bytes = 0;
};

// From a process, about itself, for the observer's rows: the protocol it
// speaks to a peer ("websocket", "http"; a string with static storage in the
// host — not in a module, which may be unloaded — or nullptr: none), and
// its outbound queue (frames and bytes not yet taken by the peer's socket).
// Relaxed stores into its own control block: no allocation, cheap enough
// for every write. Outside a process: nothing.
void set_protocol(const char* protocol) noexcept;
void set_out_queue(uint64_t frames, uint64_t bytes) noexcept;

// The bytes a queued message is counted as in a scan's `memory` (its header
// plus a small payload); process_info's relations give the exact figure.
inline constexpr uint64_t mailbox_message_estimate = 64;

// reductions_rate: by reductions_delta (reductions since `since`).
enum class sort_key : uint8_t { mailbox, reductions, memory, age, reductions_rate };

// Every live process's reductions at one moment, in slot order: the
// baseline a later scan subtracts for a rate (what recon's proc_window does
// with two full snapshots). 16 bytes a process.
struct reductions_sample {
  uint64_t at_ms = 0;  // rt::now_ms()
  std::vector<std::pair<pid, uint64_t>> by_slot;
};

struct process_query {
  sort_key sort = sort_key::reductions;  // descending; age: oldest first
  std::size_t limit = 20;
  std::optional<std::string> name;       // substring of the registered name (unnamed never match)
  std::optional<status> state;
  std::optional<process_kind> kind;
  const reductions_sample* since = nullptr;  // rows get reductions_delta against it
  reductions_sample* sample = nullptr;       // filled by the same pass (may be `since`'s successor)
};

struct process_list {
  std::size_t total = 0;    // live processes seen by the scan
  std::size_t matched = 0;  // of those, matching the filters
  std::vector<process_row> rows;  // the top `limit` by the sort key
};

// A plain thread. One pass over the table, keeping the top `limit` in a
// bounded heap: O(n log limit), no allocation per process.
process_list processes(const process_query& q);

struct process_detail {
  process_row row;
  pid parent;                   // who spawned it (no_pid: the root or a plain thread)
  uint64_t stack_size = 0;
  uint64_t stack_touched = 0;   // bytes below the stack's top seen in use at a switch
  uint64_t stack_pages = 0;     // stack_touched rounded up to whole pages
  uint64_t control_block = 0;   // the block, with the spawned function stored inline
  uint64_t relations_bytes = 0; // links/monitors containers, as at their last change
  uint64_t last_ran_ms_ago = 0;
  bool trap_exit = false;
};
// Any thread. std::nullopt: no such live process.
std::optional<process_detail> process_info(pid p);

struct relations {
  bool answered = false;  // false: the process did not reach a receive in time (or ended)
  std::vector<pid> links;
  std::vector<pid> monitors;      // processes it monitors
  std::vector<pid> monitored_by;  // processes monitoring it (a pending call counts)
  bool trap_exit = false;
  uint64_t mailbox_bytes = 0;     // exact, over the messages it has taken in
  uint64_t relations_bytes = 0;   // its links/monitors containers, exact now
  uint64_t continuation_bytes = 0;  // hibernated: the continuation waiting to run
};
// A plain thread. Sends p a signal it answers at its next drain and waits up
// to `wait` for the answer. std::nullopt: no such live process.
std::optional<relations> ask_relations(pid p, std::chrono::milliseconds wait);

// A plain thread. The pid of each fiber identity (rt::long_schedule::fiber,
// rt::worker_metrics::running) that is a live process now, else no_pid. An
// identity is a control block's address: one freed and reused by a new
// process names the new one (these are hints).
std::vector<pid> pids_of(const std::vector<const void*>& fibers);

// Any thread: messages and signals made in this OS process, ever.
uint64_t messages_made() noexcept;

// ---- tracing: the next N messages and signals delivered to one process.

struct trace_event {
  uint64_t at_ms = 0;     // rt::now_ms() when it was delivered
  bool signal = false;    // false: a message
  std::string type;       // the message type's name, or the signal's ("exit", "link", ...)
  uint64_t bytes = 0;     // envelope + payload
  pid from;               // the sender, where known
  std::string reason;     // exit signals: the reason
};

enum class trace_end : uint8_t { none, limit, exited, timeout, rate, closed };
const char* to_string(trace_end e) noexcept;

// Over this many events within one second a trace stops (recon_trace's rate).
inline constexpr uint32_t trace_rate_limit = 1000;

// A trace in progress. The target's deliveries record events into it (one
// acquire load of the process's `tracer` when nobody traces: a plain load on
// x86-64); it ends by itself at `limit` events, at the rate limit, or when
// the process exits. Made and used by one plain thread.
class tracer {
 public:
  // Attaches to p. notify_fd (an eventfd, or -1) is written (8 bytes, value
  // 1) when events arrive or the trace ends, so a poll loop can wait for it.
  // nullptr with *error set: no such process, or it is already traced.
  static std::unique_ptr<tracer> start(pid p, uint32_t limit, int notify_fd, std::string* error);
  ~tracer();  // ends it (closed) if still running, detaches, frees after a grace period
  tracer(const tracer&) = delete;
  tracer& operator=(const tracer&) = delete;

  std::vector<trace_event> take();  // the events recorded since the last take
  trace_end ended() const noexcept;  // trace_end::none while it runs
  std::string exit_reason() const;   // when ended() == exited
  void stop(trace_end why) noexcept;  // ends it now (no-op if already ended)
  pid target() const noexcept { return target_; }
  uint64_t recorded() const noexcept;  // events accepted so far

 private:
  tracer(detail::trace_core* c, pid p) : core_(c), target_(p) {}
  detail::trace_core* core_;
  pid target_;
};

}  // namespace herd::introspect
