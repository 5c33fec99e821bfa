// What a process runs: the function given to spawn (with its arguments), or
// the continuation given to hibernate. invoke() returns the continuation to
// hibernate into, or nullptr when the process is done.
#pragma once
#include <cstddef>
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
};

body* take_continuation(hibernation&& h) noexcept;

template <class F, class... Args>
struct body_impl final : body {
  template <class G, class... A>
  explicit body_impl(G&& g, A&&... a) : fn(std::forward<G>(g)), args(std::forward<A>(a)...) {}
  body* invoke() override {
    using R = std::invoke_result_t<F&, Args&...>;
    if constexpr (std::is_same_v<R, hibernation>) {
      return take_continuation(std::apply(fn, args));
    } else {
      static_assert(std::is_void_v<R>, "herd: an actor's function returns void or herd::hibernation");
      std::apply(fn, args);
      return nullptr;
    }
  }
  F fn;
  std::tuple<Args...> args;
};

// Allocates a continuation body on the heap (through herd::alloc).
void* allocate_body(std::size_t size);
void free_body(body* b) noexcept;

template <class F>
body* make_heap_body(F&& f) {
  using B = body_impl<std::decay_t<F>>;
  static_assert(alignof(B) <= 16);
  void* mem = allocate_body(sizeof(B));
  try {
    return new (mem) B(std::forward<F>(f));
  } catch (...) {
    free_body(static_cast<body*>(mem));
    throw;
  }
}

}  // namespace herd::detail
