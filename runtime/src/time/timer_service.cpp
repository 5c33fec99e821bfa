#include "time/timer_service.hpp"

#include <herd/runtime/alloc.hpp>

#include <cstddef>
#include <mutex>
#include <new>

namespace herd::rt {
namespace {

fiber* fiber_of(timer_node* n) noexcept {
  auto* t = reinterpret_cast<fiber_timer*>(reinterpret_cast<char*>(n) - offsetof(fiber_timer, node));
  return reinterpret_cast<fiber*>(reinterpret_cast<char*>(t) - offsetof(fiber, timer));
}

timer_entry* entry_of(timer_node* n) noexcept {
  return reinterpret_cast<timer_entry*>(reinterpret_cast<char*>(n) - offsetof(timer_entry, node));
}

}  // namespace

void timer_entry_unref(timer_entry* e) noexcept {
  // acq_rel: the last owner sees every other owner's writes before freeing.
  if (e->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    e->~timer_entry();
    alloc::deallocate(e);
  }
}

void timer_service::arm_fiber(fiber* f, uint64_t deadline_ms) noexcept {
  lock_guard<spinlock> g(lock_);
  f->timer.fired = false;
  f->timer.wheel = this;
  f->timer.node.kind = timer_kind_fiber;
  wheel_.insert(&f->timer.node, deadline_ms);
  lower_earliest(deadline_ms);
}

bool timer_service::disarm_fiber(fiber* f) noexcept {
  auto* s = static_cast<timer_service*>(f->timer.wheel);
  if (!s) return false;
  lock_guard<spinlock> g(s->lock_);
  if (f->timer.node.linked) s->wheel_.remove(&f->timer.node);
  bool fired = f->timer.fired;
  f->timer.fired = false;
  f->timer.wheel = nullptr;
  return fired;
}

timer_entry* timer_service::add(uint64_t deadline_ms, void (*fire)(void*), void (*drop)(void*),
                                void* arg) {
  auto* e = new (alloc::allocate(sizeof(timer_entry))) timer_entry;
  e->fire = fire;
  e->drop = drop;
  e->arg = arg;
  e->owner = this;
  e->node.kind = timer_kind_callback;
  lock_guard<spinlock> g(lock_);
  wheel_.insert(&e->node, deadline_ms);
  lower_earliest(deadline_ms);
  return e;
}

std::size_t timer_service::advance(uint64_t now_ms, wake_fn wake, void* ctx) {
  // acquire/release: the previous advancer's due_ and wheel work is visible.
  if (advancing_.exchange(true, std::memory_order_acquire)) return 0;
  struct done_t {
    std::atomic<bool>& f;
    ~done_t() { f.store(false, std::memory_order_release); }
  } done{advancing_};
  std::size_t fired = 0;
  {
    lock_guard<spinlock> g(lock_);
    wheel_.advance(now_ms, [&](timer_node* n) {
      ++fired;
      if (n->kind == timer_kind_fiber) {
        fiber* f = fiber_of(n);
        f->timer.fired = true;
        wake(ctx, f);  // under the lock: see the header
      } else {
        due_.push_back(entry_of(n));  // the wheel's reference moves to due_
      }
    });
    // Compact when cancelled callback timers outnumber live ones.
    uint64_t dead = cancelled_.load(std::memory_order_relaxed);
    if (dead > 1024 && dead > wheel_.size() / 2) {
      cancelled_.store(0, std::memory_order_relaxed);
      timer_wheel& wheel = wheel_in_callback();
      wheel_.for_each([&](timer_node* n) {
        if (n->kind != timer_kind_callback) return;
        timer_entry* e = entry_of(n);
        if (e->st.load(std::memory_order_acquire) == timer_entry::cancelled) {
          wheel.remove(n);
          due_.push_back(e);
        }
      });
    }
    earliest_.store(wheel_.next_deadline(), std::memory_order_relaxed);
  }
  for (timer_entry* e : due_) {
    uint8_t expected = timer_entry::armed;
    // acq_rel: exactly one of the firing and a cancel wins (pairs with cancel_timer).
    if (e->st.compare_exchange_strong(expected, timer_entry::fired, std::memory_order_acq_rel))
      e->fire(e->arg);
    timer_entry_unref(e);
  }
  due_.clear();
  return fired;
}

std::size_t timer_service::size() noexcept {
  lock_guard<spinlock> g(lock_);
  return wheel_.size();
}

void timer_service::clear() noexcept {
  lock_guard<spinlock> g(lock_);
  timer_wheel& wheel = wheel_in_callback();
  wheel_.for_each([&](timer_node* n) {
    wheel.remove(n);
    if (n->kind != timer_kind_callback) return;
    timer_entry* e = entry_of(n);
    uint8_t expected = timer_entry::armed;
    if (e->st.compare_exchange_strong(expected, timer_entry::cancelled, std::memory_order_acq_rel))
      e->drop(e->arg);
    timer_entry_unref(e);
  });
  earliest_.store(UINT64_MAX, std::memory_order_relaxed);
}

}  // namespace herd::rt
