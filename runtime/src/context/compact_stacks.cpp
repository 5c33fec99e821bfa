// Compact fibers' shared slots and the copies in and out (design and
// invariants: compact_stacks.hpp).
#include "context/compact_stacks.hpp"

#include <herd/runtime/alloc.hpp>
#include <herd/runtime/sanitizers.hpp>

#include <new>

#if HERD_ASAN
#include <sanitizer/asan_interface.h>
#endif
#if HERD_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace herd::rt {

compact_stacks::~compact_stacks() = default;  // the slots go with the allocator's chunks

bool compact_stacks::ensure(stack_allocator& stacks, uint32_t class_index, unsigned count, std::string* error) {
  if (ready()) return true;
  lock_guard<mutex> g(init_m_);
  if (ready_.load(std::memory_order_relaxed)) return true;
  auto e = std::make_unique<entry[]>(count);
  for (unsigned i = 0; i < count; ++i) {
    e[i].slot = stacks.carve(class_index, error);
    if (!e[i].slot) return false;  // carved slots stay with the allocator, unused
  }
  e_ = std::move(e);
  n_ = count;
  ready_.store(true, std::memory_order_release);  // publishes e_ and n_
  return true;
}

stack_slot* compact_stacks::acquire(fiber* f, compact_state* cs) noexcept {
  if (cs->home < 0) {
    // Any free slot will do; the frames are made where it runs first.
    unsigned start = next_.fetch_add(1, std::memory_order_relaxed);
    for (unsigned k = 0; k < n_; ++k) {
      entry& e = e_[(start + k) % n_];
      lock_guard<spinlock> g(e.m);
      if (!e.owner) {
        e.owner = f;
        ++e.runs;
        cs->home = static_cast<int32_t>((start + k) % n_);
        return e.slot;
      }
    }
    cs->home = static_cast<int32_t>(start % n_);
  }
  entry& e = e_[cs->home];
  lock_guard<spinlock> g(e.m);
  if (!e.owner || e.owner == f) {  // == f: the slot was handed to it by release()
    e.owner = f;
    ++e.runs;
    return e.slot;
  }
  ++e.waits;
  cs->next_waiter = nullptr;
  if (e.tail) compact_of(e.tail)->next_waiter = f;
  else e.head = f;
  e.tail = f;
  return nullptr;
}

compact_stacks::totals compact_stacks::sum() const noexcept {
  totals t;
  for (unsigned i = 0; i < count(); ++i) {
    entry& e = e_[i];
    lock_guard<spinlock> g(e.m);
    t.runs += e.runs;
    t.waits += e.waits;
  }
  return t;
}

fiber* compact_stacks::release(const compact_state* cs) noexcept {
  entry& e = e_[cs->home];
  lock_guard<spinlock> g(e.m);
  fiber* next = e.head;
  if (next) {
    e.head = compact_of(next)->next_waiter;
    if (!e.head) e.tail = nullptr;
  }
  e.owner = next;
  return next;
}

#if defined(__x86_64__)
void copy_frames(char* dst, const char* src, std::size_t n) noexcept {
  asm volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}
#else
__attribute__((no_sanitize("address", "thread"))) void copy_frames(char* dst, const char* src,
                                                                    std::size_t n) noexcept {
  volatile const char* s = src;
  for (std::size_t i = 0; i < n; ++i) dst[i] = s[i];
}
#endif

void compact_copy_in(fiber* f, compact_state* cs, stack_slot* slot) noexcept {
  f->stack = slot;
  // relaxed: an observer hint, as for any stack.
  f->stack_top.store(reinterpret_cast<uintptr_t>(slot->hi), std::memory_order_relaxed);
  if (!f->ctx) return;  // not started (or hibernated): the context is made on the slot
#if HERD_ASAN
  // The slot holds the redzones of other fibers' frames.
  __asan_unpoison_memory_region(slot->lo, slot->size());
#endif
  copy_frames(slot->hi - cs->len, cs->saved, cs->len);
}

void compact_copy_out(frame_store& frames, fiber* f, compact_state* cs) noexcept {
  const char* sp = static_cast<const char*>(f->ctx);
  auto n = static_cast<uint32_t>(f->stack->hi - sp);
  if (n > cs->cap) {
    frames.deallocate(cs->saved, cs->cap);
    cs->saved = frames.allocate(n, &cs->cap);
  }
  copy_frames(cs->saved, sp, n);
  cs->len = n;
  f->stack = nullptr;
}

void compact_make(fiber* f) {
  f->compact = new (herd::alloc::allocate(sizeof(compact_state))) compact_state{};
  f->rt_flags |= fiber_flag_compact;
}

void compact_free(frame_store& frames, fiber* f) noexcept {
  compact_state* cs = compact_of(f);
  if (!cs) return;
  frames.deallocate(cs->saved, cs->cap);
#if HERD_TSAN
  if (cs->tsan_fiber) __tsan_destroy_fiber(cs->tsan_fiber);
#endif
  cs->~compact_state();
  herd::alloc::deallocate(cs);
  f->compact = nullptr;
}

}  // namespace herd::rt
