// The context switch (see fiber_context.hpp). Invariants:
//  * A fiber runs on exactly one worker at a time. It leaves either for the
//    worker loop or — when it parks or yields and the worker has a fiber ready
//    in "run next" or its ring — straight for that fiber, saving a jump and a
//    trip through the loop (ping-pong, rings, request/reply).
//  * Every jump carries the worker's switch_side as its data; a fiber learns
//    where it runs from that, never from a thread_local. `side` in the fiber
//    is valid from its resume to its next suspend.
//  * A direct switch from A to B: A records itself and its reason in
//    side->from, jumps, and B — first thing on arrival — stores A's context
//    (the jump's fctx) and finishes A's switch (after_direct: the waiting CAS
//    for a park, the queue for a yield). Until then nobody else can see A:
//    it is neither waiting nor queued. A jump from the loop instead leaves
//    from == nullptr and the fctx is the loop's own context.
//  * libstdc++ keeps the caught-exception stack and uncaught count per thread;
//    a fiber suspended inside a catch block and resumed on another worker would
//    lose them (and lend them to whatever ran next). suspend() saves and clears
//    them, resume restores them on the new thread. abi::__cxa_get_globals() is
//    declared __attribute__((const)), so GCC may reuse its result across a jump:
//    it is called once per worker thread, from init_on_thread(), and the
//    fiber reaches the structure through its current switch_side.
//  * The jump itself is herd's (jump_x86_64.S): fcontext's frame and calling
//    convention without its save and reload of MXCSR and the x87 control
//    word, so the floating-point environment is per worker thread.
//  * ASan: every jump is bracketed by __sanitizer_start/finish_switch_fiber; a
//    dying fiber passes nullptr for its fake stack so ASan frees it.
//    TSan: one TSan fiber per pooled stack, created on first use, and one per
//    compact fiber (compact_stacks.hpp).
#include <herd/runtime/sanitizers.hpp>
#include "context/fiber_context.hpp"

#include "context/compact_stacks.hpp"
#include "context/stack_allocator.hpp"

#include <boost/context/detail/fcontext.hpp>
#include <cxxabi.h>

#if HERD_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if HERD_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace bctx = boost::context::detail;

#if defined(__x86_64__)
// jump_x86_64.S: fcontext's switch without the floating-point control words.
extern "C" bctx::transfer_t herd_jump_fcontext(bctx::fcontext_t to, void* data);
#endif

namespace herd::rt {
namespace {

// A constant pointer, not an inline wrapper: the call is as direct, and a
// debugger's backtrace of a suspended fiber still starts in suspend(), with
// no inlined frame above it (tests/gdb, `herd bt`).
#if defined(__x86_64__)
constexpr bctx::transfer_t (*jump)(bctx::fcontext_t, void*) = &herd_jump_fcontext;
#else
constexpr bctx::transfer_t (*jump)(bctx::fcontext_t, void*) = &bctx::jump_fcontext;
#endif

struct eh_globals {  // layout of libstdc++'s __cxa_eh_globals
  void* caught;
  unsigned int uncaught;
};

inline eh_globals* eh_of(switch_side* side) noexcept { return static_cast<eh_globals*>(side->eh_globals); }

inline void asan_start(void** fake, const void* bottom, std::size_t size) noexcept {
#if HERD_ASAN
  __sanitizer_start_switch_fiber(fake, bottom, size);
#else
  (void)fake, (void)bottom, (void)size;
#endif
}

inline void asan_finish(void* fake, const void** bottom_old, std::size_t* size_old) noexcept {
#if HERD_ASAN
  __sanitizer_finish_switch_fiber(fake, bottom_old, size_old);
#else
  (void)fake, (void)bottom_old, (void)size_old;
#endif
}

inline void tsan_switch(void* to) noexcept {
#if HERD_TSAN
  __tsan_switch_to_fiber(to, 0);
#else
  (void)to;
#endif
}

inline void** fake_slot(fiber* f) noexcept {
#if HERD_ASAN
  return &f->asan_fake_stack;
#else
  (void)f;
  return nullptr;  // the field exists (one layout for every build) but is unused
#endif
}

// Runs on the fiber after every jump into it: learn the worker, finish the
// sanitizer switch and a direct switch's other half, take back this fiber's
// exception state.
inline void arrived(fiber* f, bctx::transfer_t t) noexcept {
  auto* side = static_cast<switch_side*>(t.data);
  f->side = side;
  if (fiber* left = side->from) {
    asan_finish(fake_slot(f) ? *fake_slot(f) : nullptr, nullptr, nullptr);
    side->from = nullptr;
    left->ctx = t.fctx;
    side->after_direct(side, left, side->from_why);
  } else {
    side->sched_ctx = t.fctx;
    asan_finish(fake_slot(f) ? *fake_slot(f) : nullptr, &side->stack_bottom, &side->stack_size);
  }
  eh_globals* g = eh_of(side);
  g->caught = f->eh_caught;
  g->uncaught = f->eh_uncaught;
}

inline void note_stack_depth(fiber* f) noexcept {
  auto sp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  // relaxed: a statistic for the observer, written only by the running fiber.
  if (sp < f->low_sp.load(std::memory_order_relaxed) || f->low_sp.load(std::memory_order_relaxed) == 0)
    f->low_sp.store(sp, std::memory_order_relaxed);
}

[[noreturn]] void leave(fiber* f, suspend_reason why) noexcept {
  auto* side = side_of(f);
  eh_globals* g = eh_of(side);
  g->caught = nullptr;
  g->uncaught = 0;
  asan_start(nullptr, side->stack_bottom, side->stack_size);  // nullptr: this stack dies
  tsan_switch(side->tsan_fiber);
  jump(side->sched_ctx, reinterpret_cast<void*>(why));
  __builtin_unreachable();
}

void fiber_entry(bctx::transfer_t t) noexcept {
  auto* side = static_cast<switch_side*>(t.data);
  fiber* f = side->current;
  arrived(f, t);
  note_stack_depth(f);
  fiber_result r = f->ops->run(f);
  leave(f, r == fiber_result::hibernate ? suspend_reason::hibernate : suspend_reason::dead);
}

// Prepares f's context (a fresh one on its stack if it has none) and tells
// the sanitizers where the next jump goes.
inline void* enter(fiber* f, void** fake_save) noexcept {
  stack_slot* s = f->stack;
  if (!f->ctx) {
#if HERD_ASAN
    // A recycled stack keeps the poisoned redzones of its last fiber's frames.
    __asan_unpoison_memory_region(s->lo, s->size());
#endif
    f->ctx = bctx::make_fcontext(s->hi, s->size(), &fiber_entry);
  }
  asan_start(fake_save, s->lo, s->size());
#if HERD_TSAN
  // A compact fiber has its own: the frames on a shared slot change owner.
  void*& tf = (f->rt_flags & fiber_flag_compact) ? compact_of(f)->tsan_fiber : s->tsan_fiber;
  if (!tf) tf = __tsan_create_fiber(0);
  tsan_switch(tf);
#endif
  return f->ctx;
}

}  // namespace

void switch_side::init_on_thread() noexcept {
  eh_globals = abi::__cxa_get_globals();
#if HERD_TSAN
  tsan_fiber = __tsan_get_current_fiber();
#endif
}

void leave_for_good(fiber* f, suspend_reason why) noexcept { leave(f, why); }

resumed resume(switch_side& side, fiber* f) noexcept {
  side.current = f;
  bctx::transfer_t t = jump(enter(f, &side.fake_stack), &side);
  asan_finish(side.fake_stack, nullptr, nullptr);
  auto why = static_cast<suspend_reason>(reinterpret_cast<uintptr_t>(t.data));
  fiber* back = side.current;  // the fiber that came back: maybe not f
  back->ctx = (why == suspend_reason::dead || why == suspend_reason::hibernate) ? nullptr : t.fctx;
  side.current = nullptr;
  return {back, why};
}

void suspend(fiber* f, suspend_reason why) noexcept {
  note_stack_depth(f);
  auto* side = side_of(f);
  eh_globals* g = eh_of(side);
  f->eh_caught = g->caught;
  f->eh_uncaught = g->uncaught;
  g->caught = nullptr;
  g->uncaught = 0;
  // One jump for both ways out: every suspended fiber then sleeps in the same
  // call, and a direct switch to it returns with `ret` (jump_x86_64.S).
  bctx::fcontext_t to;
  void* data;
  if (fiber* next = side->pick_direct ? side->pick_direct(side, f, why) : nullptr) {
    side->from = f;
    side->from_why = why;
    side->current = next;
    to = enter(next, fake_slot(f));
    data = side;
  } else {
    asan_start(fake_slot(f), side->stack_bottom, side->stack_size);
    tsan_switch(side->tsan_fiber);
    to = side->sched_ctx;
    data = reinterpret_cast<void*>(why);
  }
  arrived(f, jump(to, data));
}

}  // namespace herd::rt
