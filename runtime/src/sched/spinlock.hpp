// A test-and-test-and-set lock for short, rarely contended sections (a timer
// wheel: its owner and the occasional canceller on another worker).
#pragma once
#include <herd/runtime/thread_safety.hpp>
#include <atomic>

#include "sched/cpu_relax.hpp"

namespace herd::rt {

class HERD_CAPABILITY("spinlock") spinlock {
 public:
  void lock() noexcept HERD_ACQUIRE() {
    for (;;) {
      // acquire: pairs with unlock()'s release.
      if (!flag_.exchange(true, std::memory_order_acquire)) return;
      while (flag_.load(std::memory_order_relaxed)) cpu_relax();
    }
  }
  void unlock() noexcept HERD_RELEASE() { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

}  // namespace herd::rt
