// hibernate, with BEAM's semantics: the process gives its stack back to the
// pool and sleeps until a message arrives; then `fn` starts on a pooled stack
// (at once, if a message is already there). A hibernated process costs its
// control block, its mailbox and what `fn` captures.
//
//   return herd::hibernated(fn);   // from the process's own function: no
//                                  // unwinding, the cheap form
//   herd::hibernate(fn);           // from anywhere in the call chain: unwinds
//                                  // the stack (every destructor runs) first
#pragma once
#include <herd/actors/detail/body.hpp>

#include <utility>

namespace herd {

class [[nodiscard]] hibernation {
 public:
  explicit hibernation(detail::body* b) noexcept : b_(b) {}
  hibernation(hibernation&& o) noexcept : b_(std::exchange(o.b_, nullptr)) {}
  hibernation& operator=(hibernation&&) = delete;
  ~hibernation() {
    if (b_) detail::free_body(b_);
  }
  detail::body* release() noexcept { return std::exchange(b_, nullptr); }

 private:
  detail::body* b_;
};

// From a process. Return the result from the process's function (or from a
// previous continuation).
template <class F>
hibernation hibernated(F&& fn) {
  return hibernation(detail::make_heap_body(std::forward<F>(fn)));
}

namespace detail {
[[noreturn]] void throw_hibernate(body* b);
}

// From a process, anywhere. Never returns. Outside a process: throws
// not_in_process (fn is destroyed).
template <class F>
[[noreturn]] void hibernate(F&& fn) {
  detail::throw_hibernate(detail::make_heap_body(std::forward<F>(fn)));
}

}  // namespace herd
