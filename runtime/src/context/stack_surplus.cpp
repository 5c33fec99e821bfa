// Stack memory's second half: the surplus (slots pools gave back, kept apart
// by age and cleanliness so that reuse prefers warm pages and trimming finds
// what it can give back without scanning) and the per-class accounting the
// pools read on their fast paths. Layout, guards and the invariants are in
// stack_allocator.cpp's header; invariants 2-4 are the ones this file keeps.
#include "stack_allocator.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <mutex>

namespace herd::rt {

void stack_allocator::slot_list::push(stack_slot* first, stack_slot* last, size_t n) noexcept {
  if (!first) return;
  last->next = head;
  if (!head) tail = last;
  head = first;
  count += n;
}

stack_slot* stack_allocator::slot_list::pop() noexcept {
  stack_slot* s = head;
  if (!s) return nullptr;
  head = s->next;
  if (!head) tail = nullptr;
  --count;
  return s;
}

void stack_allocator::slot_list::move_onto(slot_list& below) noexcept {
  below.push(head, tail, count);
  *this = {};
}

void stack_allocator::publish_counts(class_arena& arena) noexcept {
  arena.stale_hint.store(arena.stale.count, std::memory_order_relaxed);
  arena.dirty_hint.store(arena.fresh.count + arena.aging.count + arena.stale.count, std::memory_order_relaxed);
}

stack_slot* stack_allocator::take_surplus(uint32_t class_index, size_t max, size_t* taken) {
  class_arena& arena = classes_[class_index];
  stack_slot* head = nullptr;
  stack_slot** link = &head;
  size_t n = 0;
  {
    lock_guard lock(arena.surplus_mutex);
    for (slot_list* list : {&arena.fresh, &arena.aging, &arena.stale, &arena.clean}) {
      for (stack_slot* s; n < max && (s = list->pop()); ++n) {
        *link = s;
        link = &s->next;
      }
    }
    arena.surplus.store(arena.surplus.load(std::memory_order_relaxed) - n, std::memory_order_relaxed);
    publish_counts(arena);
  }
  *link = nullptr;
  surplus_.fetch_sub(n, std::memory_order_relaxed);
  if (taken) *taken = n;
  return head;
}

void stack_allocator::put_surplus(stack_slot* chain, bool unused) {
  if (!chain) return;
  class_arena& arena = classes_[chain->class_index];
  // Split into dirty and clean, keeping the order (hottest first).
  slot_list dirty, clean;
  while (chain) {
    stack_slot* s = chain;
    chain = s->next;
    s->next = nullptr;
    slot_list& to = s->clean ? clean : dirty;
    if (to.tail) to.tail->next = s; else to.head = s;
    to.tail = s;
    ++to.count;
  }
  const size_t n = dirty.count + clean.count;
  lock_guard lock(arena.surplus_mutex);
  dirty.move_onto(unused ? arena.stale : arena.fresh);
  clean.move_onto(arena.clean);
  publish_counts(arena);
  arena.surplus.store(arena.surplus.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  surplus_.fetch_add(n, std::memory_order_relaxed);
}

bool stack_allocator::has_dirty_surplus() {
  for (class_arena& arena : classes_)
    if (arena.dirty_hint.load(std::memory_order_relaxed)) return true;
  return false;
}

size_t stack_allocator::trim_surplus(size_t budget, bool any_age) {
  size_t trimmed = 0;
  for (class_arena& arena : classes_) {
    if (trimmed >= budget) break;
    if (!(any_age ? arena.dirty_hint : arena.stale_hint).load(std::memory_order_relaxed)) continue;
    // Detach a batch, give its pages back outside the lock, then file it as clean. Detached
    // slots stay counted in surplus_, so stats() does not see them flicker into "in use".
    slot_list batch;
    {
      lock_guard lock(arena.surplus_mutex);
      for (slot_list* from : {&arena.stale, &arena.aging, &arena.fresh}) {
        for (stack_slot* s; batch.count < budget - trimmed && (s = from->pop());) batch.push(s, s, 1);
        if (!any_age) break;
      }
      publish_counts(arena);
    }
    if (!batch.head) continue;
    slot_list clean, still_dirty;
    while (stack_slot* s = batch.pop()) {
      slot_list& to = trim_slot(s) ? clean : still_dirty;
      to.push(s, s, 1);
    }
    lock_guard lock(arena.surplus_mutex);
    trimmed += clean.count;
    const bool refused = still_dirty.count != 0;
    clean.move_onto(arena.clean);
    still_dirty.move_onto(arena.stale);
    publish_counts(arena);
    if (refused) break;  // the kernel refuses; try again at the next maintenance
  }
  trimmed_.fetch_add(trimmed, std::memory_order_relaxed);
  return trimmed;
}

stack_allocator::pool_counters* stack_allocator::register_pool() {
  lock_guard lock(pools_mutex_);
  pool_counters* head = pools_.load(std::memory_order_relaxed);
  for (pool_counters* p = head; p; p = p->next) {
    if (!p->in_use) {
      p->in_use = true;
      return p;
    }
  }
  auto* p = new pool_counters;
  p->in_use = true;
  p->next = head;
  pools_.store(p, std::memory_order_release);  // pairs with the readers' acquire loads
  return p;
}

void stack_allocator::unregister_pool(pool_counters* counters) {
  lock_guard lock(pools_mutex_);
  counters->in_use = false;
}

uint64_t stack_allocator::live_now(uint32_t class_index) const noexcept {
  // A pool's acquired - released is negative where stacks migrated in; the sum is not, but for
  // the moments between the loads, hence the clamp.
  uint64_t sum = 0;
  for (const pool_counters* p = pools_.load(std::memory_order_acquire); p; p = p->next)
    sum += p->acquired[class_index].load(std::memory_order_relaxed) -
           p->released[class_index].load(std::memory_order_relaxed);
  return int64_t(sum) > 0 ? sum : 0;
}

uint64_t stack_allocator::sample_live(uint32_t class_index) noexcept {
  const uint64_t live = live_now(class_index);
  std::atomic<uint64_t>& peak = classes_[class_index].peak_now;
  uint64_t seen = peak.load(std::memory_order_relaxed);
  while (live > seen && !peak.compare_exchange_weak(seen, live, std::memory_order_relaxed)) {
  }
  return live;
}

int64_t stack_allocator::excess(uint32_t class_index) const noexcept {
  const class_arena& a = classes_[class_index];
  const uint64_t peak = std::max(a.peak_now.load(std::memory_order_relaxed), a.peak_before.load(std::memory_order_relaxed));
  return int64_t(a.carved.load(std::memory_order_relaxed) - a.surplus.load(std::memory_order_relaxed) - peak);
}

void stack_allocator::roll_window(uint64_t now_ms, uint64_t window_ms) {
  if (now_ms < window_start_ms_.load(std::memory_order_relaxed) + window_ms) return;
  lock_guard lock(pools_mutex_);
  const uint64_t start = window_start_ms_.load(std::memory_order_relaxed);
  if (now_ms < start + window_ms) return;
  // Two windows without a roll: no pool released during the last one (a release tries to
  // roll), so the live count only grew in it and its peak is the live count now; and every
  // surplus slot lay there for that whole window.
  const bool skipped = now_ms >= start + 2 * window_ms;
  for (uint32_t c = 0; c < stack_class_count; ++c) {
    class_arena& a = classes_[c];
    const uint64_t live = live_now(c);
    const uint64_t before = a.peak_now.exchange(live, std::memory_order_relaxed);
    a.peak_before.store(skipped ? live : before, std::memory_order_relaxed);
    lock_guard surplus_lock(a.surplus_mutex);
    a.aging.move_onto(a.stale);
    a.fresh.move_onto(skipped ? a.stale : a.aging);
    publish_counts(a);
  }
  window_start_ms_.store(now_ms, std::memory_order_relaxed);
}

uint64_t stack_allocator::traffic_total(uint32_t class_index) const noexcept {
  uint64_t sum = 0;
  for (const pool_counters* p = pools_.load(std::memory_order_acquire); p; p = p->next)
    sum += p->acquired[class_index].load(std::memory_order_relaxed) + p->released[class_index].load(std::memory_order_relaxed);
  return sum;
}

}  // namespace herd::rt
