// Everything one running runtime owns; shared by the workers.
#pragma once
#include <herd/runtime/thread_safety.hpp>
#include <herd/runtime/runtime.hpp>

#include "context/compact_stacks.hpp"
#include "context/stack_allocator.hpp"
#include "context/stack_pool.hpp"
#include "io/poller.hpp"
#include "sched/blocking_pool.hpp"
#include "sched/idle.hpp"
#include "sched/inject_queue.hpp"
#include "sched/monitor.hpp"
#include "sched/qsbr.hpp"
#include "sched/worker.hpp"

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace herd::rt {

struct runtime_impl {
  explicit runtime_impl(const runtime_options& o);

  // Any thread: wake one parked worker if useful. `except`: the calling
  // worker's id when it is awake and only wants help (never itself).
  void notify_parked(int except = -1) noexcept;
  void record_long_schedule(const fiber* f, uint64_t ms);
  void note_parking(int delta) noexcept { mon.note_parking(delta); }

  runtime_options opts;
  unsigned n_workers;
  std::vector<std::string> warnings;
  stack_allocator stacks;
  mutex foreign_stacks_m;
  stack_pool foreign_stacks HERD_GUARDED_BY(foreign_stacks_m);  // prepare_stack from non-worker threads
  // Set (under foreign_stacks_m) when a stack goes back to foreign_stacks,
  // cleared by the park that finds every free stack there clean: a parking
  // worker looks at this one word, not the lock and the pool, when no
  // foreign thread has spawned since (relaxed: a late look only delays a trim).
  std::atomic<bool> foreign_dirty{false};
  compact_stacks compact;  // carved on the first compact spawn
  inject_queue inject, high, low;
  idle idle_state;
  poller io;
  qsbr reclaim;
  blocking_pool blocking;
  std::vector<std::unique_ptr<worker>> workers;
  monitor mon{*this};
  std::vector<std::thread> threads;
  std::atomic<bool> stopping{false};
  // set_busy_wait_floor, in TSC ticks (relaxed: each worker reads it when it
  // runs dry; a late look spins or parks one time more or less, and the
  // spinner's invariants hold for any value, see worker_park.cpp).
  std::atomic<uint64_t> busy_wait_floor_tsc{0};
  mutex long_m;
  std::deque<long_schedule> longs HERD_GUARDED_BY(long_m);
  uint64_t started_ms = 0;
};

// The running runtime (one per process at a time).
runtime_impl* current_runtime() noexcept;

// Returns a fiber's stack to the pool it came from: the worker's (`w`), or the
// foreign threads' when a non-worker thread took it (w may be null there).
// sched_api.cpp.
void give_back_stack(runtime_impl& rt, worker* w, stack_slot* s, uint64_t now_ms) noexcept;

}  // namespace herd::rt

// The runtime is what runtime::impl names in the public header.
struct herd::rt::runtime::impl : herd::rt::runtime_impl {
  using runtime_impl::runtime_impl;
};
