// The fiber-facing scheduler functions of <herd/runtime/sched.hpp>,
// <herd/runtime/blocking.hpp>, <herd/runtime/io.hpp> and <herd/runtime/timer.hpp>.
#include <herd/runtime/blocking.hpp>
#include <herd/runtime/clock.hpp>
#include <herd/runtime/io.hpp>
#include <herd/runtime/sched.hpp>
#include <herd/runtime/testing.hpp>
#include <herd/runtime/timer.hpp>

#include "context/fiber_context.hpp"
#include "runtime_impl.hpp"
#include "sched/fiber_state.hpp"

#include <sys/socket.h>

#include <cassert>
#include <cerrno>

namespace herd::rt {

bool on_worker() noexcept { return this_worker() != nullptr; }

uint32_t worker_index() noexcept {
  worker* w = this_worker();
  return w ? w->id : UINT32_MAX;
}

unsigned worker_count() noexcept {
  runtime_impl* rt = current_runtime();
  return rt ? rt->n_workers : 0;
}

namespace {
inline worker* worker_of(fiber* self) noexcept {
  return static_cast<worker*>(side_of(self)->owner);
}
}  // namespace

void park() {
  fiber* f = current();
  assert(f && "herd::rt::park outside a fiber");
  suspend(f, suspend_reason::park);
}

void park(fiber* self) { suspend(self, suspend_reason::park); }

bool park_until(uint64_t deadline_ms) {
  fiber* f = current();
  assert(f && "herd::rt::park_until outside a fiber");
  return park_until(f, deadline_ms);
}

bool park_until(fiber* self, uint64_t deadline_ms) {
  if (deadline_ms == no_deadline) {
    suspend(self, suspend_reason::park);
    return false;
  }
  worker_of(self)->timers.arm_fiber(self, deadline_ms);
  suspend(self, suspend_reason::park);
  return timer_service::disarm_fiber(self);
}

void yield() {
  fiber* f = current();
  if (f) suspend(f, suspend_reason::yield);
}

long send_batched(int fd, const void* p, std::size_t n) noexcept {
  if (fiber* f = current()) {
    worker::queued_send q{f, 0};
    if (worker_of(f)->queue_send(fd, p, n, &q)) {
      suspend(f, suspend_reason::send);
      return q.result;
    }
  }
  ssize_t r = ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
  return r < 0 ? -errno : r;
}

void consume_reduction() {
  if (fiber* f = current()) consume_reduction(f);
}

void end_fiber_now(fiber* self) { leave_for_good(self, suspend_reason::dead); }

void yield_for_budget(fiber* f) { suspend(f, suspend_reason::yield); }
void yield_for_budget_fed(fiber* f) { suspend(f, suspend_reason::yield_fed); }

namespace {
void enqueue_foreign(fiber* f) noexcept {
  runtime_impl* rt = current_runtime();
  switch (f->prio) {
    case priority::high: rt->high.push(f); break;
    case priority::low: rt->low.push(f); break;
    default: rt->inject.push(f);
  }
  rt->notify_parked();
}
}  // namespace

void wake(fiber* f) noexcept {
  if (state::transition_to_notified(f) != state::wake_result::enqueue) return;
  if (worker* w = this_worker()) {
    w->schedule(f, w->side.current != nullptr);
    return;
  }
  enqueue_foreign(f);
}

void wake_from(fiber* self, fiber* target) noexcept {
  if (!self) {
    wake(target);
    return;
  }
  if (state::transition_to_notified(target) != state::wake_result::enqueue) return;
  worker_of(self)->schedule(target, true);
}

uint64_t coarse_now_ms() noexcept {
  if (worker* w = this_worker()) return w->coarse_ms();
  return now_ms();
}

void start(fiber* child) {
  worker* w = this_worker();
  fiber* self = w ? w->side.current : nullptr;
  if (self && child->prio != priority::low) {
    w->hand_spawned(child);
    suspend(self, suspend_reason::spawn);
    return;
  }
  if (w) {
    w->schedule(child, false);
    return;
  }
  enqueue_foreign(child);
}

void testing::migrate() {
  if (fiber* f = current()) suspend(f, suspend_reason::migrate);
}

void testing::open_run_next(bool open) { worker::thieves_always_welcome.store(open, std::memory_order_relaxed); }

uint64_t testing::run_next_steal_attempts() {
  uint64_t n = 0;
  if (runtime_impl* rt = current_runtime())
    for (auto& w : rt->workers) n += w->run_next.attempts();
  return n;
}

bool prepare_stack(fiber* f, std::size_t bytes, std::string* error) {
  runtime_impl* rt = current_runtime();
  std::size_t want = bytes ? bytes : rt->opts.stack_size;
  std::size_t cls = class_for(want);
  if (cls == no_stack_class) {
    if (error) *error = "herd: stack size " + std::to_string(want) + " is out of range";
    return false;
  }
  f->stack_class = static_cast<uint16_t>(cls);
  if (worker* w = this_worker()) {
    f->stack = w->own_stacks().acquire(f->stack_class, error);
  } else {
    lock_guard<mutex> g(rt->foreign_stacks_m);
    f->stack = rt->foreign_stacks.acquire(f->stack_class, error);
    if (f->stack) f->stack->foreign = true;
  }
  if (f->stack) f->stack_top.store(reinterpret_cast<uintptr_t>(f->stack->hi), std::memory_order_relaxed);
  return f->stack != nullptr;
}

bool prepare_compact_stack(fiber* f, std::size_t bytes, std::string* error) {
  runtime_impl* rt = current_runtime();
  if (bytes && class_for(bytes) != rt->stacks.default_class()) {
    if (error)
      *error = "herd: a compact process runs on the node's default stack size (" +
               std::to_string(rt->opts.stack_size) + " bytes), not " + std::to_string(bytes);
    return false;
  }
  if (!rt->compact.ensure(rt->stacks, rt->stacks.default_class(), rt->opts.compact_slots, error)) return false;
  f->stack_class = static_cast<uint16_t>(rt->stacks.default_class());
  compact_make(f);
  return true;
}

void give_back_stack(runtime_impl& rt, worker* w, stack_slot* s, uint64_t now) noexcept {
  // A stack a foreign thread took goes back to the foreign pool, though its
  // process ends (or hibernates) on a worker: that thread cannot take from a
  // worker's pool, and a worker keeps up to its bound (its recent peak of
  // live stacks), so with many processes alive every foreign spawn would
  // carve a new stack. Slots in any pool have foreign == false.
  const bool foreign = s->foreign;
  s->foreign = false;
  if (w && !foreign) {
    w->own_stacks().release(s, now);
  } else {
    lock_guard<mutex> g(rt.foreign_stacks_m);
    rt.foreign_stacks.release(s, now);
    rt.foreign_dirty.store(true, std::memory_order_relaxed);
  }
}

void release_stack(fiber* f) noexcept {
  compact_free(current_runtime()->compact.frames, f);
  if (!f->stack) return;
  give_back_stack(*current_runtime(), this_worker(), f->stack, now_ms());
  f->stack = nullptr;
  f->stack_top.store(0, std::memory_order_relaxed);
}

std::size_t default_stack_size() noexcept { return current_runtime()->opts.stack_size; }

std::size_t stack_size_of(const fiber* f) noexcept { return class_size(f->stack_class); }

const char* guard_mechanism() noexcept { return to_string(current_runtime()->stacks.guard()); }

void retire(void* obj, void (*free_fn)(void*)) noexcept {
  runtime_impl* rt = current_runtime();
  if (!rt) {
    free_fn(obj);
    return;
  }
  if (worker* w = this_worker()) rt->reclaim.retire(w->id, obj, free_fn);
  else rt->reclaim.retire_foreign(obj, free_fn);
}

foreign_read_guard::foreign_read_guard() noexcept : rt_(nullptr) {
  if (this_worker()) return;
  runtime_impl* rt = current_runtime();
  if (!rt) return;
  rt->reclaim.enter_foreign();
  // seq_cst, with runtime::stop's store of nullptr then its load of the
  // reader count: either stop sees this reader and waits, or this sees the
  // runtime gone and leaves before reading anything.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (current_runtime() != rt) {
    rt->reclaim.leave_foreign();
    return;
  }
  rt_ = rt;
}

foreign_read_guard::~foreign_read_guard() {
  if (rt_) static_cast<runtime_impl*>(rt_)->reclaim.leave_foreign();
}

void run_blocking(blocking_job* job) {
  fiber* f = current();
  if (!f) {
    job->run(job);
    job->done.store(true, std::memory_order_release);
    return;
  }
  job->fiber = f;
  // The job and its result are in f's frames: a compact f keeps its slot.
  compact_state* cs = compact_of(f);
  if (cs) ++cs->pins;
  current_runtime()->blocking.submit(job);
  // acquire: pairs with the pool's release store of done.
  while (!job->done.load(std::memory_order_acquire)) park();
  if (cs) --cs->pins;
}

int io_register(int fd, io_source* src, uint32_t events) noexcept {
  return current_runtime()->io.add(fd, src, events);
}

int io_deregister(int fd) noexcept { return current_runtime()->io.del(fd); }

// ---- callback timers

timer_ref::timer_ref(const timer_ref& o) noexcept : e_(o.e_) {
  if (e_) e_->refs.fetch_add(1, std::memory_order_relaxed);
}

timer_ref::~timer_ref() {
  if (e_) timer_entry_unref(e_);
}

timer_ref schedule_timer(uint64_t deadline_ms, void (*fire)(void*), void (*drop)(void*), void* arg) {
  runtime_impl* rt = current_runtime();
  worker* w = this_worker();
  worker* owner = w ? w : rt->workers[0].get();
  timer_entry* e = owner->timers.add(deadline_ms, fire, drop, arg);
  // A worker parked on a later deadline must recompute its sleep.
  if (!w) owner->park_token.unpark(rt->io);
  return timer_ref(e);
}

bool cancel_timer(const timer_ref& t) noexcept {
  timer_entry* e = t.entry();
  if (!e) return false;
  uint8_t expected = timer_entry::armed;
  // acq_rel: exactly one of this and the firing wins (pairs with timer_service::advance).
  if (!e->st.compare_exchange_strong(expected, timer_entry::cancelled, std::memory_order_acq_rel))
    return false;
  e->drop(e->arg);
  e->owner->note_cancelled();
  return true;
}

int64_t timer_remaining(const timer_ref& t) noexcept {
  timer_entry* e = t.entry();
  if (!e || e->st.load(std::memory_order_acquire) != timer_entry::armed) return -1;
  return ms_until(e->node.deadline);
}

}  // namespace herd::rt
