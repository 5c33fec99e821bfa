// Per-worker stack cache. The allocator's design is at the top of stack_allocator.cpp; this file is
// the fast path in front of it.
//
// A class's free list is LIFO, so the stack handed out is the one released last: its top pages
// are resident and likely in cache, and a steady spawn/exit loop touches no new page and takes
// no lock. Beyond min_bound, the coldest stacks (the bottom of the list) go to the allocator's
// surplus, a batch per mutex:
//  - all of them while other pools also move stacks of the class (more than min_bound in this
//    window or the last). Actors often die on another worker than their spawner's, and the next
//    burst may be spawned on any: what one pool kept, another would carve anew. The surplus
//    reaches every pool, and keeps its stacks warm for a window.
//  - otherwise (a single busy worker), those that the runtime-wide peak in use, over this window
//    and the last, no longer needs (stack_allocator::excess): the stacks freed by a burst of
//    exits stay here for the next burst, 10-20 s by default.
// The in-use count is runtime-wide because a pool's acquires minus its releases drift without
// limit when actors die elsewhere. Each pool counts its own in its stack_allocator::pool_counters
// (single writer; no read-modify-write) and the allocator sums them; the peak is sampled on
// refills, every sample_period acquires, and before an eviction for excess.
//
// Trimming (maintain) follows the same windows. The bottom `low` entries of a list, where `low`
// is the fewest free stacks seen since the previous window began, were not used for a whole
// window; their pages are given back with MADV_DONTNEED. A steady load never reaches them, so
// trimming costs it no page fault. The allocator's surplus stacks are trimmed by the same rule.
#include "stack_pool.hpp"

#include <algorithm>
#include <bit>

namespace herd::rt {

stack_pool::stack_pool(stack_allocator& allocator, const stack_pool_options& options)
    : allocator_(allocator), counters_(allocator.register_pool()), options_(options) {
  if (options_.window_ms == 0) options_.window_ms = 1;
  if (options_.surplus_batch == 0) options_.surplus_batch = 1;
}

uint64_t stack_pool::others_traffic(uint32_t class_index) const noexcept {
  return allocator_.traffic_total(class_index) - counters_->acquired[class_index].load(std::memory_order_relaxed) -
         counters_->released[class_index].load(std::memory_order_relaxed);
}

stack_pool::~stack_pool() {
  for (free_list& list : lists_) evict(list, list.count);
  publish_free();
  allocator_.unregister_pool(counters_);
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

void stack_pool::enforce_bound(uint32_t class_index, bool room) {
  free_list& list = lists_[class_index];
  const size_t min_bound = options_.min_bound;
  if (!list.shared_before && !list.shared)
    list.shared = others_traffic(class_index) - list.others_base > min_bound;
  size_t keep = min_bound;
  if (!list.shared_before && !list.shared) {
    keep = list.count;
    if (allocator_.excess(class_index) > 0) {
      allocator_.sample_live(class_index);  // the peak may be newer than the last sample
      const int64_t excess = allocator_.excess(class_index);
      if (excess > 0) keep -= std::min(list.count - min_bound, size_t(excess));
    }
  }
  if (list.count <= keep) return;
  if (room) keep -= std::min(options_.surplus_batch, keep / 2);
  evict(list, list.count - keep);
}

void stack_pool::evict(free_list& list, size_t n) {
  if (n == 0) return;
  // Chain the n coldest so that the warmest of them heads the chain (and the surplus list);
  // those below both low watermarks lay unused for a whole window and may be trimmed at once.
  const size_t unused = std::min({n, list.low_now, list.low_before});
  stack_slot* chain[2] = {nullptr, nullptr};
  for (size_t i = 0; i < n; ++i) {
    stack_slot* s = list.at(i);
    s->next = chain[i < unused];
    chain[i < unused] = s;
  }
  list.bottom = (list.bottom + n) & (list.capacity - 1);
  list.count -= n;
  // The watermarks count entries from the bottom; the bottom n are gone.
  list.low_now -= std::min(list.low_now, n);
  list.low_before -= std::min(list.low_before, n);
  list.clean_below -= std::min(list.clean_below, n);
  free_total_ -= n;
  bump(to_surplus_, n);
  allocator_.put_surplus(chain[1], true);
  allocator_.put_surplus(chain[0]);
}

stack_slot* stack_pool::acquire(uint32_t class_index, std::string* error) {
  if (class_index >= stack_class_count) {
    if (error) *error = "herd: no stack class " + std::to_string(class_index);
    return nullptr;
  }
  free_list& list = lists_[class_index];
  stack_slot* slot = nullptr;
  const bool refill = list.count == 0;
  if (refill) {
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
  bump(counters_->acquired[class_index]);
  bump(acquired_);
  publish_free();
  if (refill || --list.until_sample == 0) {
    list.until_sample = sample_period;
    allocator_.sample_live(class_index);
  }
  return slot;
}

void stack_pool::release(stack_slot* slot, uint64_t now_ms) {
  const uint32_t class_index = slot->class_index;
  free_list& list = lists_[class_index];
  push(list, slot);
  roll_windows(now_ms);
  // Before the release is counted, so that a sample still sees the peak it may end.
  if (list.count > options_.min_bound) enforce_bound(class_index, true);
  bump(counters_->released[class_index]);
  bump(released_);
  publish_free();
}

void stack_pool::roll_windows(uint64_t now_ms) {
  allocator_.roll_window(now_ms, options_.window_ms);
  if (now_ms < window_start_ms_ + options_.window_ms) return;
  // If two windows passed without a roll, no release happened in the last one (a release
  // rolls): every stack now on a free list has lain there, unused, for the whole window.
  const bool skipped = now_ms >= window_start_ms_ + 2 * options_.window_ms;
  for (uint32_t class_index = 0; class_index < stack_class_count; ++class_index) {
    free_list& list = lists_[class_index];
    const uint64_t others = others_traffic(class_index);
    list.shared_before = list.shared || others - list.others_base > options_.min_bound;
    list.shared = false;
    list.others_base = others;
    list.low_before = skipped ? list.count : list.low_now;
    list.low_now = list.count;
  }
  window_start_ms_ = now_ms;
}

size_t stack_pool::maintain(uint64_t now_ms) {
  roll_windows(now_ms);
  uint64_t traffic = 0;
  for (uint32_t c = 0; c < stack_class_count; ++c) traffic += allocator_.traffic_total(c);
  if (traffic != traffic_seen_) {
    traffic_seen_ = traffic;
    quiet_since_ms_ = now_ms;
    uncarved_trimmed_ = false;
  }
  // Quiet: no worker took or gave a stack for quiet_ms, so a burst is over and nobody is
  // about to reuse these pages; waiting for the windows would keep them for 20-40 s.
  quiet_ = now_ms >= quiet_since_ms_ + options_.quiet_ms;
  size_t trimmed = 0;
  for (uint32_t class_index = 0; class_index < stack_class_count; ++class_index) {
    free_list& list = lists_[class_index];
    if (list.count > options_.min_bound) enforce_bound(class_index, false);  // e.g. a peak expired
    if (list.capacity > 4096 && list.count < list.capacity / 4)  // nor keep the burst's ring
      resize(list, std::bit_ceil(std::max<size_t>(64, 2 * list.count)));
    const size_t cold = quiet_ ? list.count : std::min(list.low_now, list.low_before);
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
  if (quiet_ && !uncarved_trimmed_) {
    uncarved_trimmed_ = true;
    allocator_.trim_uncarved();
  }
  if (trimmed < options_.trim_budget)
    trimmed += allocator_.trim_surplus(options_.trim_budget - trimmed, quiet_);
  bump(trimmed_, trimmed);
  publish_free();
  return trimmed;
}

uint64_t stack_pool::next_trim_ms() {
  // Entries above clean_below are not known to be clean; an idle pool's maintain() moves
  // clean_below up to the count within two windows, so this settles.
  bool dirty = false;
  for (const free_list& list : lists_) dirty = dirty || list.clean_below < list.count;
  if (!dirty && !allocator_.has_dirty_surplus()) return UINT64_MAX;
  return std::min(window_start_ms_ + options_.window_ms, quiet_since_ms_ + options_.quiet_ms);
}

stack_pool_stats stack_pool::stats() const noexcept {
  stack_pool_stats s;
  s.acquired = acquired_.load(std::memory_order_relaxed);
  s.released = released_.load(std::memory_order_relaxed);
  s.carved = carved_.load(std::memory_order_relaxed);
  s.from_surplus = from_surplus_.load(std::memory_order_relaxed);
  s.to_surplus = to_surplus_.load(std::memory_order_relaxed);
  s.trimmed = trimmed_.load(std::memory_order_relaxed);
  s.local_free = counters_->free_slots.load(std::memory_order_relaxed);
  return s;
}

}  // namespace herd::rt
