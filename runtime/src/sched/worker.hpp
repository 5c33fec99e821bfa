// One scheduler thread. See worker.cpp for the loop and its invariants.
#pragma once
#include <herd/runtime/fiber.hpp>

#include "context/fiber_context.hpp"
#include "context/stack_pool.hpp"
#include "io/send_ring.hpp"
#include "sched/inject_queue.hpp"
#include "sched/local_queue.hpp"
#include "sched/parker.hpp"
#include "sched/run_next.hpp"
#include "sched/tuning.hpp"
#include "time/timer_service.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace herd::rt {

struct runtime_impl;

class worker {
 public:
  worker(runtime_impl& rt, unsigned id);
  worker(const worker&) = delete;
  worker& operator=(const worker&) = delete;

  void thread_main();

  // This worker's thread only.
  // The "run next" slot; its occupant goes to schedule_local, or to the ring.
  void schedule_next(fiber* f, bool displaced_to_ring = false);
  void schedule_local(fiber* f);  // the queue's tail (the overflow's while it holds fibers); may wake a parked worker
  // By priority (wake-ups). Inline for the normal priority, which is every
  // message's wake-up: the switch costs no second call.
  void schedule(fiber* f, bool from_fiber) {
    if (f->prio != priority::normal) return schedule_by_priority(f);
    if (from_fiber) schedule_next(f);
    else schedule_local(f);
  }
  void schedule_by_priority(fiber* f);  // high or low: the global queues
  // Any thread, a relaxed look: the ring's fibers and the overflow's behind
  // them, this worker's whole queue (not run next or direct).
  std::size_t queued_approx() const noexcept {
    return ring.size_approx() + static_cast<std::size_t>(std::max<std::ptrdiff_t>(overflow.size_approx(), 0));
  }

  runtime_impl& rt;
  const unsigned id;
  switch_side side;
  local_queue<fiber, tuning::ring_capacity> ring;
  // Where a full ring spills (half of it at a time): this worker takes them
  // back on the global queue's turn and when its ring runs dry, a thief after
  // the rings. Per worker, not the global queue: a spilled fiber taken by the
  // other worker moved its lines (and its partner's, once it sends) to the
  // other core.
  inject_queue overflow;
  // Only the owner puts and (nearly always) takes; a thief takes only on
  // steal's last pass, while this worker is stuck in one fiber (run_next.hpp).
  run_next_slot<fiber> run_next;
  // Any thread: a process on another worker arms and cancels timers here (the
  // service has its own lock), and a thief fires them when this worker is
  // stuck in one fiber (steal's last pass).
  timer_service timers;
  // The owner parks on it; any thread unparks it (parker.hpp).
  parker park_token;

  // Metrics: written by the owner (relaxed), read by anyone.
  std::atomic<uint64_t> switches{0};
  std::atomic<uint64_t> steals{0};
  std::atomic<uint64_t> stolen{0};
  std::atomic<uint64_t> parks{0};
  std::atomic<uint64_t> spins{0};  // busy waits begun (runtime_options::busy_wait)
  std::atomic<uint64_t> sends_batched{0};  // sends queued on sends_
  std::atomic<uint64_t> send_flushes{0};   // flush_sends() calls that found some
  std::atomic<uint64_t> parked_tsc{0};  // time spent parked
  std::atomic<uint64_t> parked_since_tsc{0};  // when the current park began; 0: not parked
  // The fiber being run (relaxed; the monitor reads it), and whether the
  // monitor found this worker inside one fiber for over 10 ms (thieves may
  // then take its run next).
  std::atomic<const fiber*> running{nullptr};
  std::atomic<bool> stuck{false};
  // Any thread: whether another worker may take this one's run next (and
  // fire its timers): only while it is stuck, for run next is its owner's
  // to run. steal's last pass takes by it, and a parking worker's re-check
  // counts by it (work_pending_anywhere), so the two cannot disagree.
  bool open_to_thieves() const noexcept {
    return stuck.load(std::memory_order_relaxed) || thieves_always_welcome.load(std::memory_order_relaxed);
  }
  // testing::open_run_next: every worker open to thieves, stuck or not.
  static inline std::atomic<bool> thieves_always_welcome{false};

  // Owner only (the caller is this worker's thread: this_worker() == this).
  // start(): the child to run depth-first once the spawning fiber suspends.
  void hand_spawned(fiber* child) noexcept { spawned = child; }
  // Stacks for fibers started on this worker, and back from its fibers.
  stack_pool& own_stacks() noexcept { return stacks; }
  // now_ms() at the last maintenance.
  uint64_t coarse_ms() const noexcept { return coarse_ms_; }
  // The running fiber's send, queued on this worker's ring (send_ring.hpp);
  // false when the ring is not open. The fiber then suspends with
  // suspend_reason::send; flush_sends() writes *result and reschedules it.
  struct queued_send {
    fiber* f;
    long result;
  };
  bool queue_send(int fd, const void* p, std::size_t n, queued_send* q) noexcept {
    if (!sends_.is_open() || sends_.full()) return false;
    sends_.add(fd, p, n, q);
    sends_batched.store(sends_batched.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return true;
  }

 private:
  // Owner only, behind the accessors above.
  fiber* direct = nullptr;   // a child spawned depth-first
  fiber* spawned = nullptr;  // set by start() before it suspends
  stack_pool stacks;
  send_ring sends_;
  uint32_t send_picks_ = 0;  // fibers run since the first queued send
  uint64_t coarse_ms_ = 0;
  uint64_t last_stack_upkeep_ms_ = UINT64_MAX;  // park(): stack pools maintained at most once per ms

  fiber* next_local();
  fiber* next_remote();
  fiber* take_batch(inject_queue& q);
  void note_theft(uint64_t fibers) noexcept;  // steals + 1, stolen + fibers
  fiber* steal();
  void end_search();
  bool more_work_visible() const;
  bool defer_notify(uint32_t pushed) noexcept;
  void push_ring(fiber* f);           // the ring's tail, spilling half of a full ring to the overflow
  void notify_for(uint32_t pushed);   // after pushes to the ring or overflow: wake a parked worker if it helps
  void run(fiber* f);
  void flush_sends();
  bool sends_due() const noexcept {
    return sends_.pending() && (sends_.full() || send_picks_ >= tuning::send_batch_picks);
  }
  // Inlined into pick_direct and run: two calls on every direct switch.
  [[gnu::always_inline]] inline void begin_slice(fiber* f);
  [[gnu::always_inline]] inline void end_slice(fiber* f);
  static fiber* pick_direct(switch_side* side, fiber* leaving, suspend_reason why);
  bool compact_enter(fiber* f);
  void compact_leave(fiber* f, suspend_reason why);
  static void after_direct(switch_side* side, fiber* left, suspend_reason why);
  void maintenance(uint64_t now_tsc);
  // The busy wait in TSC ticks: runtime_options::busy_wait or the floor a
  // layer set (set_busy_wait_floor), whichever is longer.
  uint64_t spin_ticks() const noexcept;
  fiber* spin(uint64_t ticks);
  void park();
  bool work_pending_anywhere() const;
  void fire_timers(uint64_t now_ms);
  bool advance_virtual_time();
  void migrate_away(fiber* f);
  fiber* take_migrant();

  uint32_t run_next_streak_ = 0;
  const fiber* prev_ran_ = nullptr;  // the fiber whose slice ended last here (compared, never read through)
  uint32_t global_countdown_ = tuning::global_queue_every;  // picks until the injection queue gets a turn
  uint32_t maint_countdown_ = tuning::maintenance_every;    // picks until maintenance
  uint32_t clock_countdown_ = tuning::clock_read_every;     // picks until the TSC is read
  uint64_t next_maint_tsc_ = 0;
  uint64_t spin_tsc_ = 0;  // runtime_options::busy_wait in TSC ticks; 0: park at once
  bool searching_ = false;
  bool overflow_first_ = false;  // next_local: which of overflow and the injection queue is asked first
  // While park() dispatches I/O readiness (the worker is still counted as
  // parked): wake-ups it queues are counted, not announced; after waking it
  // asks for help only if it queued more than the one it will run itself.
  bool park_dispatch_ = false;
  uint32_t park_pushes_ = 0;
  uint64_t rng_;
  std::string scratch_error_;

  // testing::migrate: fibers another worker handed here. Looked at only in
  // maintenance and when the ring ran dry, never per pick; has_migrants_ is a
  // relaxed hint (the mutex orders the list, the sender's unpark wakes a
  // parked owner, and a busy one finds it at its next maintenance).
  mutex migrants_m_;
  std::vector<fiber*> migrants_ HERD_GUARDED_BY(migrants_m_);
  std::atomic<bool> has_migrants_{false};
};

// The worker whose thread calls, or nullptr. Not inlined, with a compiler
// barrier: GCC may keep a thread_local's address in a register across a call
// that suspends a fiber, which would then read another worker's state.
worker* this_worker() noexcept;

// A timer_service callback: wakes the fiber whose timer fired, on the worker
// passed as ctx.
void wake_from_timer(void* ctx, fiber* f);

}  // namespace herd::rt
