// What a process runs: the function given to spawn (with its arguments), or
// the continuation given to hibernate. invoke() returns the continuation to
// hibernate into, or nullptr when the process is done.
#pragma once
#include <herd/actors/module_anchor.hpp>
#include <herd/runtime/alloc.hpp>

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

namespace herd {
class hibernation;
}

namespace herd::detail {

struct body {
  virtual ~body() = default;
  virtual body* invoke() = 0;
  // True when the body lives inside the process block (spawn's first body);
  // continuations are separate allocations.
  bool inline_storage = false;
  // A heap body that is a process's first (spawned by module code): it runs
  // at once, as an inline one does, instead of waiting for a message as a
  // continuation does.
  bool first = false;
  // A continuation's allocation size (make_heap_body), for the observer's
  // `memory`; 0 for an inline body (the control block's body_size counts it).
  uint32_t heap_bytes = 0;
};

body* take_continuation(hibernation&& h) noexcept;

template <class F, class... Args>
struct body_impl final : body {
  template <class G, class... A>
  explicit body_impl(G&& g, A&&... a) : fn(std::forward<G>(g)), args(std::forward<A>(a)...) {}
  // Runs once, so the arguments are passed as rvalues where the function
  // accepts them (as std::thread does: a move-only argument can be taken by
  // value), else as lvalues (a function taking T& gets the stored copy).
  static constexpr bool by_rvalue = std::is_invocable_v<F&, Args&&...>;
  using R = typename std::conditional_t<by_rvalue, std::invoke_result<F&, Args&&...>,
                               std::invoke_result<F&, Args&...>>::type;
  body* invoke() override {
    if constexpr (std::is_same_v<R, hibernation>) {
      return take_continuation(call());
    } else {
      static_assert(std::is_void_v<R>, "herd: an actor's function returns void or herd::hibernation");
      call();
      return nullptr;
    }
  }
  R call() {
    if constexpr (by_rvalue) return std::apply(fn, std::move(args));
    else return std::apply(fn, args);
  }
  F fn;
  std::tuple<Args...> args;
};

// Allocates a continuation body on the heap (through herd::alloc).
void* allocate_body(std::size_t size);
void free_body(body* b) noexcept;

// A continuation made by module code (hibernate): wraps `inner` in a host-side
// body that holds a reference on module `a` and drops it only after inner's
// destructor (module code) has returned. Frees inner if it throws. From module
// code only (a non-null anchor).
body* wrap_module_body(body* inner, module_anchor* a);

template <class F>
body* make_heap_body(F&& f) {
  using B = body_impl<std::decay_t<F>>;
  static_assert(alignof(B) <= 16);
  void* mem = allocate_body(sizeof(B));
  body* b;
  try {
    b = new (mem) B(std::forward<F>(f));
  } catch (...) {
    // Nothing was constructed: free the memory only (free_body would call
    // the virtual destructor through an unset vptr). allocate_body is
    // alloc::allocate (actors/src/process.cpp).
    alloc::deallocate(mem);
    throw;
  }
  b->heap_bytes = static_cast<uint32_t>(sizeof(B));
  if (__builtin_expect(this_module() != nullptr, 0)) return wrap_module_body(b, this_module());
  return b;
}

}  // namespace herd::detail
