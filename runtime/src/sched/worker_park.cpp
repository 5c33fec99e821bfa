// A worker's upkeep between picks and when it runs dry: maintenance (every
// tuning::maintenance_every picks or 1 ms), parking, and the test hook that
// hands a fiber to another worker. The pick loop itself is worker.cpp.
//
// Maintenance (timers due, a non-blocking I/O poll, a quiescent-state report
// for reclamation) runs every tuning::maintenance_every picks or every 1 ms,
// whichever is first — an idle-only poll is how BEAM's acceptors starve under
// load. The TSC is read only every tuning::clock_read_every picks; a fiber that runs long without yielding is the monitor's business
// (monitor.cpp), not the loop's.
//
// Parking: the worker fires due timers, trims its stack pool and the foreign
// threads' pool (every free stack once no stack has moved for a second: a
// burst is over), reports itself parked to `idle` (if it was the last searcher it re-checks every queue, see
// idle.hpp), goes offline for reclamation, and sleeps until its next timer:
// in epoll_wait if it can take the poller token, else on its futex. There is
// no periodic tick; an idle node sleeps.
//
// Busy wait (runtime_options::busy_wait, BEAM's +sbwt; off by default, or
// the floor a layer sets with set_busy_wait_floor — the distribution, while
// a node connection is up): a worker that ran dry and is a searcher looks
// for work for up to that long before it parks — a request/reply peer's next
// message then costs no kernel wake-up (issue 18). The length is read each
// time a worker runs dry, and nothing below depends on it staying the same
// between workers or turns. Invariants:
//   - Only a searcher spins (worker::thread_main), so at most half the
//     workers spin at once, and the idle word stays right without a new
//     state: the spinner counts as unparked and searching, which is what
//     tells producers (should_notify, the push hint) that someone will find
//     their work and nobody need be woken. It therefore looks where a searcher
//     would: its ring and run next, the global queues, its migrants (relaxed
//     looks every turn), and every tuning::spin_poll_every_ns a full look —
//     next_local, next_remote (steal, then a non-blocking poll if it can take
//     the poller token), due timers. A producer's push it misses is caught
//     where a searcher's is: park()'s seq_cst RMW and re-check as the last
//     searcher (idle.hpp); an unpark() meant for it (a foreign thread's timer,
//     a migrant) leaves its parker notified, so that park returns at once.
//   - The poller token is held only for one non-blocking poll at a time, as
//     in maintenance. A worker that parks while another worker searches
//     does not take it (it sleeps on its futex, for at most 10 ms): the I/O
//     stays with the spinner, which ends in park() and takes the token then
//     (its own re-count sees no other searcher, or the last one does), so
//     once every worker is idle one of them sleeps in epoll_wait, as without
//     the spin. Were the sleeper to take it, each request would wake it from
//     epoll_wait while the spinner, unable to poll, spun for nothing. The
//     10 ms cap covers a spinner that found a fiber which never yields; the
//     awake worker's maintenance polls I/O meanwhile (every 61 picks or 1 ms).
//     A worker that parks while another holds the token for a non-blocking
//     poll sleeps on its futex without a cap; should the holder then run a
//     fiber that never yields, the monitor sees the token free beside a
//     stuck worker and wakes a parked one to take it (monitor.cpp).
//   - It reports quiescent states as it goes (it holds no reclaimable
//     pointer between fibers), so a grace period does not wait for the spin.
//   - It stops as soon as `stopping` is set; stop() waits for no spin.
//   - It calls sched_yield on every turn: with more runnable threads than
//     cores the thread it waits for (the peer node's, on this host) may need
//     its core. Without it two spinning nodes on a loaded 2-core VM took
//     230-320 us per call against 38-96 us with it; a yield every 8 us
//     instead of every turn was slower too (median 64.6 against 42.4 us).
//   - Deterministic runtimes never spin (virtual time moves only when every
//     worker is parked).
// A spin is CPU time: metrics count it as busy (it is not parked), and a
// node that idles between sparse requests burns up to busy_wait per request.
//
// Test hooks stay off the pick path: testing::migrate hands the fiber to the
// next worker's migrants list, which that worker reads only in maintenance and
// when it ran dry (and runs the fiber directly, so no thief takes it back).
#include "sched/worker.hpp"

#include "runtime_impl.hpp"
#include "sched/cpu_relax.hpp"
#include "time/clock_impl.hpp"

#include <herd/runtime/alloc.hpp>
#include <herd/runtime/clock.hpp>

#include <sched.h>

#include <algorithm>
#include <mutex>

namespace herd::rt {

void worker::maintenance(uint64_t t) {
  maint_countdown_ = tuning::maintenance_every;
  next_maint_tsc_ = t + clock_impl::tsc_per_ms();
  rt.reclaim.quiescent(id);
  if (rt.reclaim.has_work(id)) rt.reclaim.reclaim(id);
  uint64_t now = now_ms();
  coarse_ms_ = now;
  if (timers.earliest() <= now) fire_timers(now);
  if (!direct && has_migrants_.load(std::memory_order_relaxed)) direct = take_migrant();
  // A busy worker takes only as many ready sources as its queue (ring and
  // overflow, one FIFO: worker.cpp) has room for; the rest wait in the
  // kernel's ready list, in order, and cost no memory there. Taking them all
  // once put connections where a busy worker looked every 61st pick while
  // later polls kept refilling the ring (10,000 echo connections: p50 41 ms,
  // p99 760 ms). Counting the ring alone, once the ring drained to refill
  // from the overflow, let a poll take up to ~900 sources at once, all
  // queued ahead of whatever woke next (a reconnect storm's push p99: 16.7
  // ms counting the ring, 2.7 ms counting both; docs/handoff.md).
  if (rt.io.has_sources()) {
    std::size_t queued = std::min<std::size_t>(queued_approx(), tuning::ring_capacity);
    uint32_t room = tuning::ring_capacity - static_cast<uint32_t>(queued);
    if (room >= tuning::poll_min_room && rt.io.try_acquire()) {
      rt.io.poll(0, static_cast<int>(room - tuning::poll_room_margin));
      rt.io.release();
    }
  }
}

// testing::migrate: the next worker runs it. With one worker it only yields.
void worker::migrate_away(fiber* f) {
  if (rt.n_workers == 1) return schedule_local(f);
  worker& to = *rt.workers[(id + 1) % rt.n_workers];
  {
    lock_guard lock(to.migrants_m_);
    to.migrants_.push_back(f);
    to.has_migrants_.store(true, std::memory_order_relaxed);
  }
  to.park_token.unpark(rt.io);
}

// One at a time, straight to running (direct, or what next_remote returns):
// in the ring a thief — the worker it left — could take it back.
fiber* worker::take_migrant() {
  lock_guard lock(migrants_m_);
  if (migrants_.empty()) return nullptr;
  fiber* f = migrants_.back();
  migrants_.pop_back();
  has_migrants_.store(!migrants_.empty(), std::memory_order_relaxed);
  return f;
}

void worker::fire_timers(uint64_t now) { timers.advance(now, &wake_from_timer, this); }

// What this worker could take if it stayed awake: rings, the global queues,
// and another worker's run next only while steal could take it
// (open_to_thieves). Counting every run next made the last
// searcher notify itself and park again, in a loop, for as long as a busy
// worker had a fiber in run next — 8.5 parks per caller, each with two clock
// reads and the idle word's mutex twice, when 1M spawns blocked in a call
// (issue 20).
bool worker::work_pending_anywhere() const {
  for (auto& w : rt.workers) {
    if (!w->ring.empty_approx() || !w->overflow.empty()) return true;
    if (w.get() != this && w->open_to_thieves() && w->run_next.occupied_seq_cst())
      return true;
  }
  return !rt.inject.empty_seq_cst() || !rt.high.empty() || !rt.low.empty();
}

bool worker::advance_virtual_time() {
  if (rt.blocking.in_flight() > 0) return false;
  uint64_t e = timers.earliest();
  if (e == UINT64_MAX) return false;
  clock_impl::set_virtual(e);
  fire_timers(now_ms());
  return true;
}

uint64_t worker::spin_ticks() const noexcept {
  return std::max(spin_tsc_, rt.busy_wait_floor_tsc.load(std::memory_order_relaxed));
}

// The busy wait (runtime_options::busy_wait): see the header comment.
fiber* worker::spin(uint64_t ticks) {
  const uint64_t per_ms = clock_impl::tsc_per_ms();
  const uint64_t poll_every = per_ms * tuning::spin_poll_every_ns / 1000000;
  uint64_t t = clock_impl::tsc();
  const uint64_t end = t + ticks;
  uint64_t next_poll = t + poll_every;  // next_remote has just looked everywhere
  spins.store(spins.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  for (;;) {
    for (int i = 0; i < 8; ++i) cpu_relax();
    if (rt.stopping.load(std::memory_order_acquire)) return nullptr;
    // Relaxed looks: a hint to look now. What they miss is found at the next
    // full look, or by park()'s re-check after its seq_cst RMW (idle.hpp).
    bool seen = !ring.empty_approx() || !overflow.empty() || run_next.occupied() ||
                !rt.inject.empty() || !rt.high.empty() || !rt.low.empty() ||
                has_migrants_.load(std::memory_order_relaxed);
    t = clock_impl::tsc();
    if (seen || t >= next_poll) {
      rt.reclaim.quiescent(id);  // between fibers: holds no reclaimable pointer
      uint64_t now = now_ms();
      coarse_ms_ = now;
      if (timers.earliest() <= now) fire_timers(now);
      if (fiber* f = next_local()) return f;
      if (fiber* f = next_remote()) return f;
      t = clock_impl::tsc();
      next_poll = t + poll_every;
    }
    if (t >= end && !thieves_always_welcome.load(std::memory_order_relaxed)) return nullptr;  // (the hook: spin on)
    sched_yield();
  }
}

void worker::park() {
  uint64_t now = now_ms();
  coarse_ms_ = now;
  if (timers.earliest() <= now) {
    fire_timers(now);
    return;  // something may be runnable now
  }
  // A quiet runtime after a burst: its stacks' pages went back above, the
  // allocator's free pages follow. At most once per millisecond: a worker
  // that parks and is woken thousands of times a second (1M callers each
  // waking a server: issue 20's spawn phase) spent 13% of its CPU here. A
  // skipped pass is not lost: the timeout below wakes the worker for the
  // next trim window.
  const bool stack_upkeep = now != last_stack_upkeep_ms_;
  if (stack_upkeep) {
    last_stack_upkeep_ms_ = now;
    if (stacks.maintain(now) > 0 && stacks.quiet()) alloc::collect();
  }
  // The foreign threads' pool has no worker of its own: whichever worker
  // parks trims it too (try_lock: a foreign spawn holding it is not waited
  // for, another worker's park will do).
  uint64_t foreign_trim = UINT64_MAX;
  if (stack_upkeep && rt.foreign_dirty.load(std::memory_order_relaxed) && rt.foreign_stacks_m.try_lock()) {
    rt.foreign_stacks.maintain(now);
    foreign_trim = rt.foreign_stacks.next_trim_ms();
    if (foreign_trim == UINT64_MAX) rt.foreign_dirty.store(false, std::memory_order_relaxed);
    rt.foreign_stacks_m.unlock();
  } else if (!stack_upkeep && rt.foreign_dirty.load(std::memory_order_relaxed)) {
    foreign_trim = now;  // skipped this millisecond: wake for it (in 100 ms, below)
  }
  rt.reclaim.quiescent(id);
  if (rt.reclaim.has_work(id)) rt.reclaim.reclaim(id);
  if (rt.opts.deterministic && advance_virtual_time()) return;

  bool last = rt.idle_state.transition_to_parked(id, searching_);
  searching_ = false;
  if (last && work_pending_anywhere()) rt.notify_parked();
  rt.reclaim.go_offline(id);

  int timeout = -1;
  uint64_t e = timers.earliest();
  if (rt.opts.deterministic) {
    timeout = -1;  // virtual time moves only when all is blocked (handled above)
  } else if (e != UINT64_MAX) {
    // `now` from the top: the microseconds since can only make this sleep
    // end later than exact, never before the timer is due.
    timeout = e <= now ? 0 : static_cast<int>(std::min<uint64_t>(e - now, 1u << 30));
  }
  if (rt.reclaim.has_work(id) && (timeout < 0 || timeout > 50)) timeout = 50;
  if (!rt.opts.deterministic) {
    // Wake for the next trim window while free stacks still hold pages (at
    // least 100 ms apart): an idle node gives a burst's stack memory back.
    if (uint64_t t = std::min(stacks.next_trim_ms(), foreign_trim); t != UINT64_MAX) {
      int until = t <= now + 100 ? 100 : static_cast<int>(std::min<uint64_t>(t - now, 1u << 30));
      if (timeout < 0 || until < timeout) timeout = until;
    }
  }
  // With busy waits, a worker that parks while another searches (spins)
  // leaves the poller to it: the spinner polls it and takes it when it parks
  // in turn. Taking it here would put the I/O on the sleeper — a kernel
  // wake-up per request while the spinner spins for nothing (herd -> herd
  // calls: the two roles settled that way and never swapped). Capped at the
  // monitor's tick, in case the spinner found one fiber that never yields.
  const bool leave_poller = spin_ticks() != 0 && rt.idle_state.num_searching() > 0;
  if (leave_poller && (timeout < 0 || timeout > 10)) timeout = 10;
  if (!rt.stopping.load(std::memory_order_acquire)) {
    poller* io = !leave_poller && rt.io.has_sources() && rt.io.try_acquire() ? &rt.io : nullptr;
    uint64_t t0 = clock_impl::tsc();
    // relaxed: statistics; metrics() counts a park in progress from here.
    parked_since_tsc.store(t0, std::memory_order_relaxed);
    rt.note_parking(+1);
    park_dispatch_ = io != nullptr;
    park_pushes_ = 0;
    park_token.park(timeout, io);
    park_dispatch_ = false;
    rt.note_parking(-1);
    parked_since_tsc.store(0, std::memory_order_relaxed);
    parked_tsc.store(parked_tsc.load(std::memory_order_relaxed) + (clock_impl::tsc() - t0),
                     std::memory_order_relaxed);
    if (io) rt.io.release();
  }
  rt.reclaim.go_online(id);
  parks.store(parks.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  searching_ = rt.idle_state.transition_from_parked(id);
  // What the dispatch queued beyond the one fiber this worker runs next is
  // for a sibling: wake one now that this worker counts as awake (a notified
  // worker is a searcher and wakes one more when it finds work, end_search).
  if (park_pushes_ > 1 && !searching_ && rt.n_workers > 1 && rt.idle_state.should_notify_hint())
    rt.notify_parked(static_cast<int>(id));
  park_pushes_ = 0;
  now = now_ms();
  if (timers.earliest() <= now) fire_timers(now);
}

}  // namespace herd::rt
