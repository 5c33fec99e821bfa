// The worker loop. One thread per worker; each iteration picks one fiber and
// resumes it until it switches back.
//
// Where the next fiber comes from, in order:
//   1. `direct`: a child the last fiber spawned (depth-first: the child runs at
//      once, its parent waits in "run next"; skynet's peak memory then tracks
//      live work, not spawned work).
//   2. the global high-priority queue;
//   3. every 61st pick (tuning.hpp), the global injection queue and this
//      worker's overflow (taking turns at going first), then the low-priority
//      queue (so none starves under local load — Go's 1/61 rule);
//   4. "run next" (the fiber the last one woke: ping-pong stays on one core,
//      hot in cache) — at most 3 times in a row, then the ring gets a turn;
//   5. the local ring (FIFO);
//   6. a batch from this worker's overflow, from the injection queue, the low
//      queue;
//   7. stealing half of another worker's ring (at most half the workers search
//      at once), then one fiber from another worker's overflow, then — last
//      pass — a victim's "run next", but only if the monitor saw the victim
//      inside one fiber for over 10 ms;
//   8. polling I/O without blocking; then parking.
//
// A full ring spills half of itself into the worker's own overflow queue, not
// into the global one (issue 19), and while the overflow holds fibers a
// newcomer queues behind them (schedule_local): ring and overflow are one
// FIFO queue, so with more runnable fibers than the ring holds each still
// waits its turn once (one exception, for fork-join trees: schedule_next).
// Spilled per worker, not globally: with more runnable fibers than a ring
// holds (1,000 ping-pong pairs on 2 workers), spilled fibers that either
// worker took from a shared queue kept moving their lines and their
// partners' to the other core; per worker they come back where they ran,
// and only a thief moves them (1,000 pairs: 20.6M -> 24.5M msgs/s,
// docs/handoff.md). The overflow is a relaxed look for the idle protocol,
// like a ring: only its awake owner pushes to it.
//
// Searching (idle.hpp has the protocol and its lost wake-up argument): a
// worker that ran dry becomes a searcher (at most half the workers at once)
// before it steals; a parked worker that is woken starts as one. It stops at
// the first fiber it picks, wherever that came from (end_search): a worker
// woken while its own park dispatched I/O onto its ring finds work in step 5,
// not step 7, and one that stayed a searcher while it ran its ring kept the
// others from searching and its pushes from waking them (issue 13: a fan-out
// on one core of two). The last searcher to find work wakes one more if more
// work is in sight. A push onto the ring wakes a parked worker only when
// nobody searches (a relaxed look; a searcher will find the ring), and never
// the pusher itself; pushes made while the worker dispatches I/O inside its
// own park wake one only if there were more than one (issue 19: the worker
// that polls runs what it polled).
//
// Atomic orderings used here, and what each pairs with:
//   run_next  run_next.hpp: the owner puts with a release store (an exchange
//             over an occupant) and takes with a load and a store; a thief
//             takes with an acq_rel exchange after a membarrier.
//   stopping  acquire load; pairs with runtime::stop's release store (what
//             stop wrote before is seen by the exiting worker).
//   the idle word (idle.hpp): seq_cst RMWs for every transition; the one
//             relaxed read is the push hint, argued there. The last searcher's
//             re-check before parking (work_pending_anywhere) reads the
//             global queues' counts seq_cst after its own seq_cst RMW: a
//             foreign producer pushes, then does its seq_cst RMW on the same
//             idle word, so one of the two sees the other. The rings and run
//             next slots belong to awake workers, which run them themselves;
//             their relaxed reads are covered by the hint's argument.
//   ring      local_queue.hpp's own argument (publish, free, tail-not-behind).
//   switches, steals, stolen, parks, parked_tsc, parked_since_tsc, running,
//   stuck, a fiber's reductions / last_run_ms / stack_top / low_sp: relaxed,
//             single writer, read by the monitor, metrics and the observer
//             as hints; nothing is published through them.
//   foreign_dirty: relaxed; a late look delays a trim, the pool itself is
//             under foreign_stacks_m.
//
// Maintenance, parking and the test hook: worker_park.cpp.
//
// After a fiber switches back, the worker acts on the reason: `park` tries the
// waiting transition (a wake that came while the fiber ran makes it fail, and
// the fiber runs again), `yield` goes to the ring's tail, `yield_fed` (a
// receive out of budget with mail waiting) to run next, `spawn` puts the
// parent in run next and the child in `direct`, `hibernate` returns the stack
// to the pool before the waiting transition (a wake-up after that allocates a
// fresh stack), `dead` returns the stack and hands the fiber to its owner,
// `send` leaves it with this worker's send ring (io/send_ring.hpp): it is in
// no queue until flush_sends(), which the loop calls when it runs dry, when
// the ring is full or when send_batch_picks fibers ran since the first send
// was queued (pick_direct then declines, so the loop gets its turn).
#include <herd/runtime/sanitizers.hpp>
#include "sched/worker.hpp"

#include "context/overflow_handler.hpp"
#include "runtime_impl.hpp"
#include "sched/asym_fence.hpp"
#include "sched/fiber_state.hpp"
#include "time/clock_impl.hpp"

#include <herd/runtime/alloc.hpp>
#include <herd/runtime/clock.hpp>

#include <algorithm>

namespace herd::rt {
namespace {

__attribute__((tls_model("initial-exec"))) thread_local worker* tl_worker = nullptr;

// A fiber put in run next usually runs within a few hundred nanoseconds; when
// many fibers take turns (a ring, a thousand pairs) its saved stack frames
// and control block are cold by then. Prefetching them now lets the misses
// overlap with what the waker still does instead of coming one by one as the
// resumed fiber returns through its frames.
inline void prefetch_fiber(const fiber* f) noexcept {
#if HERD_TSAN
  (void)f;  // reading a queued fiber's ctx races with a thief that runs it: only a hint
#else
  if (const char* sp = static_cast<const char*>(f->ctx))
    for (int i = 0; i < 768; i += 64) __builtin_prefetch(sp + i);
  const char* cb = reinterpret_cast<const char*>(f);
  __builtin_prefetch(cb + 64);
  __builtin_prefetch(cb + 128);
  __builtin_prefetch(cb + 192);
#endif
}

// Only the control block's first lines, without reading anything from it.
inline void prefetch_block(const fiber* f) noexcept {
  const char* cb = reinterpret_cast<const char*>(f);
  __builtin_prefetch(cb);
  __builtin_prefetch(cb + 64);
}

// After taking a fiber from the ring, warm up the two behind it, as a
// pipeline: the second one's block (a prefetch, no load), then the first
// one's context and stack (prefetch_fiber reads its ctx, whose block the
// pop before warmed). With 10,000 connections every control block is cold;
// reading the next one's ctx here outright stalled the pick on that miss
// (issue 21: 93% of pick_direct's samples).
inline fiber* pop_ring(local_queue<fiber, tuning::ring_capacity>& ring) noexcept {
  fiber* f = ring.pop();
  if (f) {
    if (fiber* after = ring.peek()) prefetch_fiber(after);
    if (fiber* later = ring.peek_at(1)) prefetch_block(later);
  }
  return f;
}

}  // namespace

void wake_from_timer(void* ctx, fiber* f) {
  if (state::transition_to_notified(f) == state::wake_result::enqueue)
    static_cast<worker*>(ctx)->schedule(f, false);
}

[[gnu::noinline]] worker* this_worker() noexcept {
  asm volatile("" ::: "memory");
  return tl_worker;
}

worker* raw_this_worker_for_signal() noexcept { return tl_worker; }

// <herd/runtime/sched.hpp>'s current(), here beside tl_worker so that a send
// and a receive (which ask it once each) read the thread's worker without a
// second call through this_worker(). Not inlined: a fiber may resume on
// another thread, and a caller that inlined the thread-local read could keep
// the old thread's address across the switch.
[[gnu::noinline]] fiber* current() noexcept {
  asm volatile("" ::: "memory");
  worker* w = tl_worker;
  return w ? w->side.current : nullptr;
}

worker::worker(runtime_impl& r, unsigned i)
    : rt(r),
      id(i),
      run_next(asym::available()),
      timers(now_ms()),
      stacks(r.stacks),
      rng_(0x9E3779B97F4A7C15ull * (i + 1)) {
  side.owner = this;
  side.pick_direct = &worker::pick_direct;
  side.after_direct = &worker::after_direct;
}

void worker::thread_main() {
  tl_worker = this;
  side.init_on_thread();
  install_thread_altstack();
  if (rt.opts.batch_sends && !rt.opts.deterministic) sends_.open();
  next_maint_tsc_ = clock_impl::tsc() + clock_impl::tsc_per_ms();
  spin_tsc_ = static_cast<uint64_t>(rt.opts.busy_wait.count()) * clock_impl::tsc_per_ms() / 1000;
  for (;;) {
    if (sends_due()) flush_sends();
    fiber* f = next_local();
    if (!f && sends_.pending()) {
      flush_sends();
      f = next_local();
    }
    if (!f) f = next_remote();
    if (f) {
      if (searching_) end_search();
      if (sends_.pending()) ++send_picks_;
      run(f);
      continue;
    }
    if (rt.stopping.load(std::memory_order_acquire)) break;
    if (uint64_t ticks = searching_ ? spin_ticks() : 0) {
      if (fiber* g = spin(ticks)) {
        if (searching_) end_search();
        run(g);
        continue;
      }
      if (rt.stopping.load(std::memory_order_acquire)) break;
    }
    park();
  }
  remove_thread_altstack();
  tl_worker = nullptr;
}

fiber* worker::next_local() {
  if (--clock_countdown_ == 0) {
    clock_countdown_ = tuning::clock_read_every;
    uint64_t t = clock_impl::tsc();
    if (t >= next_maint_tsc_) maintenance(t);
  }
  if (--maint_countdown_ == 0) maintenance(clock_impl::tsc());
  if (fiber* f = direct) {
    direct = nullptr;
    return f;
  }
  if (!rt.high.empty())
    if (fiber* f = rt.high.pop()) return f;
  if (--global_countdown_ == 0) {
    global_countdown_ = tuning::global_queue_every;
    // The global queue and this worker's spill take turns at going first:
    // either alone could keep the other waiting while the ring stays full.
    overflow_first_ = !overflow_first_;
    if (overflow_first_)
      if (fiber* f = overflow.pop()) return f;
    if (fiber* f = rt.inject.pop()) return f;
    if (!overflow_first_)
      if (fiber* f = overflow.pop()) return f;
    if (fiber* f = rt.low.pop()) return f;
  }
  if (run_next_streak_ < tuning::run_next_streak_max) {
    if (fiber* f = run_next.take()) {
      ++run_next_streak_;
      return f;
    }
  }
  run_next_streak_ = 0;
  if (fiber* f = pop_ring(ring)) return f;
  if (fiber* f = run_next.take()) {
    run_next_streak_ = 1;
    return f;
  }
  return nullptr;
}

fiber* worker::next_remote() {
  fiber* found = nullptr;
  if (has_migrants_.load(std::memory_order_relaxed))
    if (fiber* f = take_migrant()) return f;
  if (fiber* f = take_batch(overflow)) return f;
  found = take_batch(rt.inject);
  if (!found) found = rt.low.pop();
  if (!found) {
    // Even a lone worker becomes a searcher: the last searcher to park
    // re-checks every queue, which is what catches a foreign thread's push
    // that saw this worker awake and so woke nobody (see idle.hpp).
    if (!searching_) searching_ = rt.idle_state.transition_to_searching();
    if (searching_ && rt.n_workers > 1) found = steal();
  }
  if (!found && rt.io.has_sources() && rt.io.try_acquire()) {
    rt.io.poll(0);
    rt.io.release();
    found = ring.pop();
    if (!found) found = run_next.take();
  }
  return found;
}

// A batch from q (this worker's overflow or the injection queue): the first
// to run now, the rest onto the ring, taking at most half its free room.
fiber* worker::take_batch(inject_queue& q) {
  if (q.empty()) return nullptr;
  fiber* batch[tuning::inject_batch_max];
  uint32_t room = tuning::ring_capacity - ring.size_approx();
  std::size_t n = q.pop_bulk(batch, std::min<uint32_t>(room / 2 + 1, tuning::inject_batch_max));
  if (n == 0) return nullptr;
  // Onto the ring, whatever is left in q: the batch is q's head, older than
  // anything pushed behind it.
  for (std::size_t i = 1; i < n; ++i) push_ring(batch[i]);
  if (n > 1) notify_for(static_cast<uint32_t>(n - 1));
  return batch[0];
}

// Whatever the searcher found — stolen, injected, or its own ring and run next
// (a worker notified while epoll_wait dispatched wake-ups onto its own ring
// finds them there) — it is no longer searching. If it was the last searcher
// and more work is in sight (any ring, its run next, the global queues), one
// more worker goes to look. Not when the one
// fiber it found is all there is (issue 19): a request/reply node whose idle
// worker finds the next request in its own poll woke the other worker per
// request, to find nothing and park again (two context switches each time).
void worker::end_search() {
  searching_ = false;
  if (rt.idle_state.transition_from_searching() && more_work_visible()) rt.notify_parked(static_cast<int>(id));
}

// After this worker's seq_cst RMW on the idle word (transition_from_searching):
// a foreign producer pushes to a global queue, then does its own seq_cst RMW
// on that word. Either its RMW came first and the seq_cst loads below see its
// push, or it sees this worker no longer searching and wakes a parked one
// itself (idle.hpp). The rings and this worker's run next are relaxed looks,
// as with any push (idle.hpp's hint): a ring whose owner saw this worker
// searching and so woke nobody is in sight here; a look that misses it costs
// parallelism until that owner's next push, never the work (its owner runs it).
bool worker::more_work_visible() const {
  if (run_next.occupied()) return true;
  for (auto& w : rt.workers)
    if (!w->ring.empty_approx() || !w->overflow.empty()) return true;
  return !rt.inject.empty_seq_cst() || !rt.high.empty_seq_cst() || !rt.low.empty_seq_cst();
}

// relaxed: metrics, written by this worker only.
void worker::note_theft(uint64_t fibers) noexcept {
  steals.store(steals.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (fibers) stolen.store(stolen.load(std::memory_order_relaxed) + fibers, std::memory_order_relaxed);
}

fiber* worker::steal() {
  const unsigned n = rt.n_workers;
  rng_ ^= rng_ << 13, rng_ ^= rng_ >> 7, rng_ ^= rng_ << 17;
  const unsigned start = static_cast<unsigned>(rng_ % n);
  for (unsigned i = 0; i < n; ++i) {
    worker* v = rt.workers[(start + i) % n].get();
    if (v == this) continue;
    uint32_t before = ring.size_approx();
    if (fiber* f = v->ring.steal_into(ring)) {
      note_theft(1 + ring.size_approx() - before);
      return f;
    }
  }
  for (unsigned i = 0; i < n; ++i) {
    worker* v = rt.workers[(start + i) % n].get();
    if (v == this) continue;
    if (fiber* f = v->overflow.pop()) {
      note_theft(1);
      return f;
    }
  }
  if (fiber* f = rt.inject.pop()) return f;
  // Last pass: a worker stuck in one long fiber must not starve its run next
  // or its timers.
  for (unsigned i = 0; i < n; ++i) {
    worker* v = rt.workers[(start + i) % n].get();
    if (v == this || !v->open_to_thieves()) continue;
    if (uint64_t now = now_ms(); v->timers.earliest() <= now) v->timers.advance(now, &wake_from_timer, this);
    if (fiber* f = ring.pop()) return f;  // what those timers woke
    if (fiber* f = v->run_next.steal()) {
      note_theft(0);  // counted as a steal only, as it always was
      return f;
    }
  }
  return nullptr;
}

inline void worker::begin_slice(fiber* f) {
  f->reductions_left = rt.opts.reduction_budget;
  f->last_run_ms.store(coarse_ms_, std::memory_order_relaxed);
  running.store(f, std::memory_order_relaxed);
}

inline void worker::end_slice(fiber* f) {
  prev_ran_ = f;
  // relaxed: statistics, written by the worker running f only.
  f->reductions.store(f->reductions.load(std::memory_order_relaxed) + rt.opts.reduction_budget -
                          f->reductions_left,
                      std::memory_order_relaxed);
  switches.store(switches.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

void worker::run(fiber* f) {
  if (f->rt_flags & fiber_flag_compact) [[unlikely]] {
    if (!f->stack && !compact_enter(f)) return;  // waits for its home slot
  } else if (!f->stack) {  // a hibernated fiber woke up: it needs a fresh stack
    f->stack = stacks.acquire(f->stack_class, &scratch_error_);
    if (f->stack) f->stack_top.store(reinterpret_cast<uintptr_t>(f->stack->hi), std::memory_order_relaxed);
    if (!f->stack) {
      f->rt_flags |= fiber_flag_no_stack;
      state::mark_dead(f);
      f->ops->finished(f);
      return;
    }
  }
  begin_slice(f);
  resumed r = resume(side, f);
  running.store(nullptr, std::memory_order_relaxed);
  f = r.back;
  end_slice(f);
  if (f->rt_flags & fiber_flag_compact) [[unlikely]] compact_leave(f, r.why);
  switch (r.why) {
    case suspend_reason::park:
      if (!state::try_park(f)) schedule_next(f);
      break;
    case suspend_reason::yield:
      schedule_local(f);
      break;
    case suspend_reason::yield_fed:
      schedule_next(f);
      break;
    case suspend_reason::migrate:
      migrate_away(f);
      break;
    case suspend_reason::spawn:
      direct = spawned;
      spawned = nullptr;
      schedule_next(f, /*displaced_to_ring=*/true);
      break;
    case suspend_reason::hibernate:
      if (f->stack) give_back_stack(rt, this, f->stack, coarse_ms_);
      f->stack = nullptr;
      // relaxed: observer hints. The next stack starts untouched.
      f->stack_top.store(0, std::memory_order_relaxed);
      f->low_sp.store(0, std::memory_order_relaxed);
      if (!state::try_park(f)) schedule_next(f);
      break;
    case suspend_reason::dead:
      if (f->stack) give_back_stack(rt, this, f->stack, coarse_ms_);
      f->stack = nullptr;
      f->stack_top.store(0, std::memory_order_relaxed);
      state::mark_dead(f);
      f->ops->finished(f);
      break;
    case suspend_reason::send:
      break;  // held by sends_ until flush_sends()
  }
}

// A compact fiber about to run: its home slot, with its frames copied back.
// False: the slot is another's, and f waits on its list (compact_stacks.hpp).
bool worker::compact_enter(fiber* f) {
  compact_state* cs = compact_of(f);
  stack_slot* slot = rt.compact.acquire(f, cs);
  if (!slot) return false;
  compact_copy_in(f, cs, slot);
  return true;
}

// A compact fiber back in the loop: copied out and its slot handed on, unless
// its frames must stay (a blocking() job or a batched send writes into them).
void worker::compact_leave(fiber* f, suspend_reason why) {
  compact_state* cs = compact_of(f);
  const bool ended = why == suspend_reason::dead || why == suspend_reason::hibernate;
  if (!ended && (cs->pins || why == suspend_reason::send)) return;
  if (ended) {
    f->stack = nullptr;  // its ctx is null already: the next run starts afresh
    cs->len = 0;
  } else {
    compact_copy_out(rt.compact.frames, f, cs);
  }
  fiber* next = rt.compact.release(cs);
  if (ended) cs->home = -1;
  if (why == suspend_reason::dead) compact_free(rt.compact.frames, f);
  // Next, not at the queue's tail: the slot is the waiter's now, and every
  // other fiber homed there waits until it has run. Queued behind a backlog
  // (a million callers woken by their replies), it held the slot idle for the
  // whole queue and nearly every caller ended up waiting once.
  if (next) schedule_next(next);
}

// Every queued send goes to the kernel in one io_uring_enter; each sender,
// its result written, goes to the queue's tail (schedule_local) in the order
// it sent.
void worker::flush_sends() {
  send_picks_ = 0;
  send_flushes.store(send_flushes.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  sends_.flush(
      [](void* ctx, void* tag, int result) {
        auto* q = static_cast<queued_send*>(tag);
        q->result = result;
        static_cast<worker*>(ctx)->schedule_local(q->f);
      },
      this);
}

// A fiber parking or yielding may switch straight to the next one when the
// loop has nothing else to do first: no maintenance due, no spawned child, no
// high-priority work, not the injection queue's turn.
fiber* worker::pick_direct(switch_side* side, fiber* leaving, suspend_reason why) {
  auto* w = static_cast<worker*>(side->owner);
  // A compact fiber is copied out by the loop, on the worker's own stack.
  if (leaving->rt_flags & fiber_flag_compact) return nullptr;
  if (why != suspend_reason::park && why != suspend_reason::yield && why != suspend_reason::yield_fed &&
      why != suspend_reason::send)
    return nullptr;
  // Queued sends that are due go out from the loop, never from here: the
  // leaving fiber's context is not saved yet, and a sender must not be
  // rescheduled before it has left.
  if (w->sends_.pending()) {
    ++w->send_picks_;
    if (w->sends_due()) return nullptr;
  }
  // A countdown about to run out is the loop's (next_local) to act on -- but
  // only when there is something to act on: a switch through the loop costs
  // two context switches and the loop's own picking, and fibers that keep
  // handing off to each other would leave the direct path every 8th switch
  // just to read the clock. So the clock is read here, and the global queues
  // are looked at here; the loop is taken only for maintenance that is due
  // or a global queue that holds work.
  if (w->maint_countdown_ <= 1) return nullptr;
  if (w->clock_countdown_ <= 1) {
    if (clock_impl::tsc() >= w->next_maint_tsc_) return nullptr;
    w->clock_countdown_ = tuning::clock_read_every + 1;  // less the one below
  }
  if (w->global_countdown_ <= 1) {
    if (!w->rt.inject.empty() || !w->overflow.empty() || !w->rt.low.empty()) return nullptr;
    w->global_countdown_ = tuning::global_queue_every + 1;
  }
  if (w->direct || !w->rt.high.empty()) return nullptr;
  fiber* next = nullptr;
  if (w->run_next_streak_ < tuning::run_next_streak_max) {
    next = w->run_next.take();
    if (next) ++w->run_next_streak_;
  }
  if (!next) {
    // The ring gets its turn; if it is empty, run next goes on.
    w->run_next_streak_ = 0;
    next = pop_ring(w->ring);
    if (!next) {
      next = w->run_next.take();
      if (next) w->run_next_streak_ = 1;
    }
    if (!next) return nullptr;
  }
  if (!next->stack) {  // hibernated: the loop acquires its stack
    w->direct = next;
    return nullptr;
  }
  --w->maint_countdown_;
  --w->clock_countdown_;
  --w->global_countdown_;
  w->end_slice(leaving);
  w->begin_slice(next);
  return next;
}

void worker::after_direct(switch_side* side, fiber* left, suspend_reason why) {
  auto* w = static_cast<worker*>(side->owner);
  if (why == suspend_reason::park) {
    if (!state::try_park(left)) w->schedule_next(left);
  } else if (why == suspend_reason::yield_fed) {
    w->schedule_next(left);
  } else if (why == suspend_reason::send) {
    // held by sends_ until flush_sends()
  } else {
    w->schedule_local(left);
  }
}

// What a spawning parent displaces from run next goes to the ring even while
// the overflow holds fibers: a fork-join tree (skynet) then runs depth-first
// and its live set stays small. Queued behind the overflow like the rest,
// skynet 1M took 1.25x as long with 1.5x the RSS (docs/handoff.md, session
// 28).
void worker::schedule_next(fiber* f, bool displaced_to_ring) {
  // Not the fiber that ran just before this one (ping-pong's partner, a
  // fiber woken while it ran): its frames and control block are in cache.
  if (f != prev_ran_) prefetch_fiber(f);
  fiber* prev = run_next.put(f);
  if (!prev) return;
  if (!displaced_to_ring) return schedule_local(prev);
  push_ring(prev);
  notify_for(1);
}

// The ring and the overflow are one FIFO queue: while spilled fibers wait in
// the overflow, a newcomer queues behind them, not on the ring. The ring then
// drains, and refills from the overflow's head (take_batch), so every fiber
// waits its turn once, however many are runnable. Pushing newcomers to the
// ring instead let any fiber that was woken again and again (a sender resumed
// by every flush, a connection by every poll) cycle through the ring while
// the spilled ones got one pick in 61: at 10,000 echo connections, p99 2.2 s
// against p50 0.14 s.
void worker::schedule_local(fiber* f) {
  if (!overflow.empty()) overflow.push(f);
  else push_ring(f);
  notify_for(1);
}

void worker::push_ring(fiber* f) {
  ring.push_back_or_overflow(f, [this](fiber** items, uint32_t n) { overflow.push_bulk(items, n); });
}

void worker::notify_for(uint32_t pushed) {
  if (defer_notify(pushed)) return;
  // Help for the ring: only when nobody searches and someone is parked (a
  // relaxed look; why that is enough: idle.hpp). Never this worker itself.
  if (rt.n_workers > 1 && rt.idle_state.should_notify_hint()) rt.notify_parked(static_cast<int>(id));
}

// Inside park()'s I/O dispatch this worker is about to run what it queues:
// count the push; park() asks for help afterwards only if there was more than
// one (Go's netpoll: the poller runs the first and injects the rest). Waking
// a sibling for the single fiber a readiness event made runnable cost a
// futex wake, a steal race and the poller token moving between workers on
// every request of a request/reply connection (issue 19).
bool worker::defer_notify(uint32_t pushed) noexcept {
  if (!park_dispatch_) return false;
  park_pushes_ += pushed;
  return true;
}

void worker::schedule_by_priority(fiber* f) {
  if (f->prio == priority::high) rt.high.push(f);
  else rt.low.push(f);
  if (!defer_notify(1)) rt.notify_parked();
}

}  // namespace herd::rt
