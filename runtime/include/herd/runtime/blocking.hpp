// blocking(fn): run fn on a separate thread pool (BEAM's dirty schedulers) and
// park the calling fiber until it returns; the worker runs other fibers
// meanwhile. The return is a blocking point (an exit signal is acted on there).
#pragma once
#include <atomic>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

namespace herd::rt {

struct blocking_job {
  void (*run)(blocking_job*) noexcept = nullptr;
  void* fiber = nullptr;          // to wake when done; nullptr: signal a waiting thread
  std::atomic<bool> done{false};  // release by the pool thread before its wake
  std::exception_ptr error;
};

// From a fiber (or any thread: then it runs inline). Returns when job->done.
void run_blocking(blocking_job* job);

template <class F>
auto blocking(F&& fn) -> std::invoke_result_t<F&> {
  using R = std::invoke_result_t<F&>;
  struct job : blocking_job {
    F* f;
    std::conditional_t<std::is_void_v<R>, bool, std::optional<R>> result{};
  } j;
  j.f = &fn;
  j.run = [](blocking_job* b) noexcept {
    auto* self = static_cast<job*>(b);
    try {
      if constexpr (std::is_void_v<R>) {
        (*self->f)();
      } else {
        self->result.emplace((*self->f)());
      }
    } catch (...) {
      self->error = std::current_exception();
    }
  };
  run_blocking(&j);
  if (j.error) std::rethrow_exception(j.error);
  if constexpr (!std::is_void_v<R>) return std::move(*j.result);
}

}  // namespace herd::rt
