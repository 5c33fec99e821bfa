// herd::node starts the runtime, runs a root process and stops cleanly.
//
//   herd::node n({.workers = 2});
//   herd::exit_reason r = n.run([] { ... });   // returns when the root exits
//
// When the root exits, every process still alive is sent an exit signal
// (`shutdown`) and the node waits for all of them to unwind, up to
// shutdown_timeout; one that never reaches a blocking point cannot be
// unwound, so the node reports it and aborts rather than hang or leak.
// Afterwards no process, stack or message is left (live_messages() == 0).
#pragma once
#include <herd/actors/exit_reason.hpp>
#include <herd/actors/pid.hpp>
#include <herd/actors/spawn.hpp>
#include <herd/runtime/runtime.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>

namespace herd {

struct node_options {
  unsigned workers = 0;                 // 0: one per core
  bool deterministic = false;           // one worker, virtual clock (tests)
  std::size_t max_actors = 1 << 20;     // like BEAM's +P
  std::size_t stack_size = 0;           // default stack; 0: 64 KiB
  std::size_t guard_size = 0;           // 0: one page
  bool force_mprotect_guards = false;
  std::size_t wanted_fds = 0;
  unsigned blocking_threads = 16;
  uint32_t reduction_budget = 2000;
  // rt::runtime_options::compact_slots: the shared slots compact processes
  // (spawn_options::compact_stack) run on; 0: 8 per worker; at most 4096.
  unsigned compact_slots = 0;
  std::chrono::milliseconds shutdown_timeout{10000};
  bool quiet = false;                   // no start-up warnings on stderr
  // rt::runtime_options::busy_wait: a worker that ran dry looks for work this
  // long before it sleeps (BEAM's +sbwt); 0, the default, sleeps at once.
  // At most rt::max_busy_wait (10 ms); out of range: the node's constructor
  // throws std::invalid_argument.
  std::chrono::microseconds busy_wait{0};
  // rt::runtime_options::batch_sends: the socket sends of one worker's
  // processes go to the kernel together, in one io_uring_enter, when that
  // worker runs out of other work; false (or HERD_BATCH_SENDS=0): one
  // send(2) each.
  bool batch_sends = true;
};

struct node_stats {
  std::size_t live_processes = 0;
  std::size_t spawned = 0;
  std::size_t exited = 0;
  std::size_t max_actors = 0;           // the effective limit
};

// Any thread: the running node's counts (zeros when no node runs).
node_stats current_node_stats() noexcept;

class node {
 public:
  explicit node(const node_options& o = {});
  ~node();
  node(const node&) = delete;
  node& operator=(const node&) = delete;

  // From the thread that made the node. Runs fn as the root process (with
  // `opts`) and returns its exit reason once it and every other process have
  // exited. May be called once.
  exit_reason run(std::function<void()> fn, const spawn_options& opts = {});

  node_stats stats() const noexcept;
  rt::runtime& runtime() noexcept;

  // Live messages in the whole process (leak checks). Any thread.
  static std::ptrdiff_t live_messages() noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace herd
