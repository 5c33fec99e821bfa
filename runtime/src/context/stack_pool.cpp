// Per-worker stack cache. The allocator's design is at the top of stack_arena.cpp; this file is
// the fast path in front of it.
//
// A class's free list is LIFO, so the stack handed out is the one released last: its top pages
// are resident and likely in cache, and a steady spawn/exit loop touches no new page and makes
// no syscall. The list is bounded by max(min_bound, the most stacks this pool had in use during
// the current and the previous window); beyond that, the coldest stacks (the bottom of the
// list) go to the allocator's surplus in batches, so one mutex is taken per batch, not per
// release. The peak is kept for one to two windows (10-20 s by default): a burst of spawns is
// followed by a burst of exits, and the stacks freed by it are kept for the next burst that
// long.
//
// Trimming (maintain) follows the same windows. The bottom `low` entries of a list, where `low`
// is the fewest free stacks seen since the previous window began, were not used for a whole
// window; their pages are given back with MADV_DONTNEED. A steady load never reaches them, so
// trimming costs it no page fault. The allocator's dirty surplus stacks are trimmed too.
#include "stack_pool.hpp"

#include <algorithm>
#include <bit>

namespace herd::rt {

stack_pool::stack_pool(stack_allocator& allocator, const stack_pool_options& options)
    : allocator_(allocator), options_(options) {
  if (options_.window_ms == 0) options_.window_ms = 1;
  if (options_.surplus_batch == 0) options_.surplus_batch = 1;
  allocator_.register_pool(&free_slots_);
}

stack_pool::~stack_pool() {
  for (free_list& list : lists_) evict(list, list.count);
  publish_free();
  allocator_.unregister_pool(&free_slots_);
}

void stack_pool::grow(free_list& list) { resize(list, std::max<size_t>(64, list.capacity * 2)); }

void stack_pool::resize(free_list& list, size_t capacity) {
  std::unique_ptr<stack_slot*[]> ring(new stack_slot*[capacity]);
  for (size_t i = 0; i < list.count; ++i) ring[i] = list.at(i);
  list.ring = std::move(ring);
  list.capacity = capacity;
  list.bottom = 0;
}

void stack_pool::push(free_list& list, stack_slot* slot) {
  if (list.count == list.capacity) grow(list);
  list.at(list.count++) = slot;
  ++free_total_;
}

size_t stack_pool::bound(const free_list& list) const noexcept {
  return std::max<size_t>(options_.min_bound, size_t(std::max(list.peak_now, list.peak_before)));
}

void stack_pool::evict(free_list& list, size_t n) {
  if (n == 0) return;
  // Chain the n coldest so that the warmest of them heads the chain (and the surplus list).
  stack_slot* chain = nullptr;
  for (size_t i = 0; i < n; ++i) {
    stack_slot* s = list.at(i);
    s->next = chain;
    chain = s;
  }
  list.bottom = (list.bottom + n) & (list.capacity - 1);
  list.count -= n;
  // The watermarks count entries from the bottom; the bottom n are gone.
  list.low_now -= std::min(list.low_now, n);
  list.low_before -= std::min(list.low_before, n);
  list.clean_below -= std::min(list.clean_below, n);
  free_total_ -= n;
  bump(to_surplus_, n);
  allocator_.put_surplus(chain);
}

stack_slot* stack_pool::acquire(uint32_t class_index, std::string* error) {
  if (class_index >= stack_class_count) {
    if (error) *error = "herd: no stack class " + std::to_string(class_index);
    return nullptr;
  }
  free_list& list = lists_[class_index];
  stack_slot* slot = nullptr;
  if (list.count == 0) {
    size_t taken = 0;
    stack_slot* chain = allocator_.take_surplus(class_index, options_.surplus_batch, &taken);
    if (taken) {
      while (list.capacity < taken) grow(list);
      // The chain comes warmest first; the warmest must end on top.
      for (size_t i = taken; i-- > 0; chain = chain->next) list.at(i) = chain;
      list.count = taken;
      free_total_ += taken;
      bump(from_surplus_, taken);
    } else {
      slot = allocator_.carve(class_index, error);
      if (!slot) return nullptr;
      bump(carved_);
    }
  }
  if (!slot) {
    slot = list.at(--list.count);
    --free_total_;
    list.low_now = std::min(list.low_now, list.count);
    list.clean_below = std::min(list.clean_below, list.count);
  }
  slot->clean = false;
  if (++list.in_use > list.peak_now) list.peak_now = list.in_use;
  bump(acquired_);
  publish_free();
  return slot;
}

void stack_pool::release(stack_slot* slot, uint64_t now_ms) {
  free_list& list = lists_[slot->class_index];
  push(list, slot);
  --list.in_use;
  bump(released_);
  roll_windows(now_ms);
  const size_t limit = bound(list);
  if (list.count > limit) {
    // Leave some room under the bound so the next releases do not take the mutex again.
    const size_t keep = limit - std::min(options_.surplus_batch, limit / 2);
    evict(list, list.count - keep);
  }
  publish_free();
}

void stack_pool::roll_windows(uint64_t now_ms) {
  if (now_ms < window_start_ms_ + options_.window_ms) return;
  // If two windows passed without a roll, no release happened in the last one (a release
  // rolls): since then stacks were only acquired. So the live count now is that window's peak,
  // and every stack now on a free list has lain there, unused, for the whole window.
  const bool skipped = now_ms >= window_start_ms_ + 2 * options_.window_ms;
  for (free_list& list : lists_) {
    const int64_t live = std::max<int64_t>(list.in_use, 0);
    list.peak_before = skipped ? live : list.peak_now;
    list.peak_now = live;
    list.low_before = skipped ? list.count : list.low_now;
    list.low_now = list.count;
  }
  window_start_ms_ = now_ms;
}

size_t stack_pool::maintain(uint64_t now_ms) {
  roll_windows(now_ms);
  size_t trimmed = 0;
  for (free_list& list : lists_) {
    const size_t limit = bound(list);
    if (list.count > limit) evict(list, list.count - limit);  // the peak that held them expired
    if (list.capacity > 4096 && list.count < list.capacity / 4)  // nor keep the burst's ring
      resize(list, std::bit_ceil(std::max<size_t>(64, 2 * list.count)));
    const size_t cold = std::min(list.low_now, list.low_before);
    while (list.clean_below < cold && trimmed < options_.trim_budget) {
      stack_slot* s = list.at(list.clean_below);
      if (!s->clean) {
        if (!trim_slot(s)) break;
        ++trimmed;
      }
      ++list.clean_below;
    }
  }
  allocator_.count_trimmed(trimmed);
  if (trimmed < options_.trim_budget) trimmed += allocator_.trim_surplus(options_.trim_budget - trimmed);
  bump(trimmed_, trimmed);
  publish_free();
  return trimmed;
}

stack_pool_stats stack_pool::stats() const noexcept {
  stack_pool_stats s;
  s.acquired = acquired_.load(std::memory_order_relaxed);
  s.released = released_.load(std::memory_order_relaxed);
  s.carved = carved_.load(std::memory_order_relaxed);
  s.from_surplus = from_surplus_.load(std::memory_order_relaxed);
  s.to_surplus = to_surplus_.load(std::memory_order_relaxed);
  s.trimmed = trimmed_.load(std::memory_order_relaxed);
  s.local_free = free_slots_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace herd::rt
