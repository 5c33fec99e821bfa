// herd::rt::runtime — the worker threads, their stacks, timers, poller and the
// blocking pool. One runtime runs at a time in a process (the overflow handler
// and the fiber-local accessors are process-wide). The actors layer's node owns
// one; users normally never touch this type directly.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace herd::rt {

struct runtime_options {
  unsigned workers = 0;               // 0: one per core
  bool deterministic = false;         // one worker and a virtual clock (tests)
  std::size_t stack_size = 0;         // default stack; 0: 64 KiB (x4 under ASan)
  std::size_t guard_size = 0;         // 0: one page (16 pages under ASan)
  bool force_mprotect_guards = false; // test the fallback path
  std::size_t max_actors = 1 << 20;   // for the vm.max_map_count check
  std::size_t wanted_fds = 0;         // for the RLIMIT_NOFILE check
  unsigned blocking_threads = 16;     // upper bound of the blocking pool
  uint32_t reduction_budget = 2000;   // reductions per time slice
  // Shared slots compact fibers run on (rt::prepare_compact_stack), carved at
  // the first compact spawn. 0: 8 per worker. More slots: fewer compact
  // fibers wait for one another's slot (one is held while its fiber runs or
  // is pinned). At most 4096, else the constructor throws std::invalid_argument.
  unsigned compact_slots = 0;
  uint32_t long_schedule_ms = 10;     // a slice longer than this is recorded
  bool quiet = false;                 // do not print start-up warnings
  // A worker that ran dry looks for work this long before it sleeps (BEAM's
  // +sbwt): 0 (the default) sleeps at once. See worker_park.cpp; what it costs:
  // docs/distribution.md. 0..max_busy_wait, else the constructor throws
  // std::invalid_argument. Ignored when deterministic.
  std::chrono::microseconds busy_wait{0};
  // Socket sends made by the fibers of one worker go to the kernel together,
  // in one io_uring_enter, when that worker runs out of other work (see
  // runtime/src/io/send_ring.hpp; what it saves: docs/push-gateway.md).
  // false, or HERD_BATCH_SENDS=0 in the environment: one send(2) each, in
  // the caller (HERD_BATCH_SENDS other than 0 or 1: the constructor throws
  // std::invalid_argument). Where io_uring is refused, sends are not batched
  // either way.
  bool batch_sends = true;
};

// The longest busy_wait accepted: beyond a few milliseconds a spin is a busy
// loop that never sleeps between the gaps it was meant to bridge.
inline constexpr std::chrono::microseconds max_busy_wait{10000};

// Any thread. A floor under runtime_options::busy_wait, set by a layer whose
// traffic is request/reply between processes on other nodes (the
// distribution, while a node connection is up: BEAM's schedulers spin by
// default, and a kernel wake-up per message is most of a call's time there):
// workers spin for the larger of the two. Clamped to 0..max_busy_wait; one
// value per runtime (the last call wins); a no-op when no runtime runs or it
// is deterministic.
void set_busy_wait_floor(std::chrono::microseconds floor) noexcept;

struct worker_metrics {
  uint64_t switches = 0;       // fibers resumed
  uint64_t steals = 0;         // successful steal operations
  uint64_t stolen = 0;         // fibers taken by them
  uint64_t parks = 0;
  uint64_t spins = 0;          // busy waits begun (runtime_options::busy_wait)
  uint64_t sends_batched = 0;  // socket sends queued on the worker's ring (batch_sends)
  uint64_t send_flushes = 0;   // io_uring_enter calls that took them to the kernel
  uint64_t busy_ns = 0;        // time spent running fibers
  uint64_t run_queue = 0;      // ring + own overflow + run next, now (approximate)
  uint64_t timers = 0;         // armed timers on this worker's wheel
  const void* running = nullptr;  // the fiber running on it now (identity only; a hint)
};

struct long_schedule {
  uint64_t at_ms;       // when it was seen
  uint64_t duration_ms; // how long the slice ran
  const void* fiber;    // which fiber (identity only; may be dead by now)
};

struct runtime_metrics {
  std::vector<worker_metrics> workers;
  std::vector<long_schedule> long_schedules;  // the most recent ones
  uint64_t polls = 0;          // epoll_wait calls, all workers
  uint64_t stacks_in_use = 0;
  uint64_t stacks_carved = 0;
  uint64_t stacks_trimmed = 0;  // times a free stack's pages were given back
  uint64_t uptime_ms = 0;
  std::string guard;
  // Compact fibers (prepare_compact_stack): the shared slots carved (0 until
  // the first compact spawn), the times one was given a slot to run on (each
  // a copy back of its frames, unless it had none yet) and the times one
  // waited for its slot, held by another.
  uint64_t compact_slots = 0;
  uint64_t compact_runs = 0;
  uint64_t compact_waits = 0;
};

class runtime {
 public:
  explicit runtime(const runtime_options& o = {});
  ~runtime();  // stop() if still running
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  // From the thread that created it. Starts the workers. Sets SIGPIPE to
  // ignored unless the program handles it (a write to a closed pipe or
  // socket then fails with EPIPE instead of ending the process); programs
  // it spawns inherit that, as with any ignored signal.
  void start();
  // From a foreign thread. Returns once every worker has exited. Fibers still
  // alive are abandoned (the actors layer makes sure there are none).
  void stop();

  unsigned workers() const noexcept;
  runtime_metrics metrics() const;
  const std::vector<std::string>& startup_warnings() const noexcept;

  struct impl;
  impl& internals() noexcept { return *impl_; }

 private:
  std::unique_ptr<impl> impl_;
};

// Any thread: the running runtime's metrics (what runtime::metrics() gives);
// false, `out` untouched, when no runtime runs. The caller must keep the
// runtime from stopping meanwhile (the observer stops before its node).
bool current_metrics(runtime_metrics& out);

}  // namespace herd::rt
