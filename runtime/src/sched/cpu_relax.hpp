// The spin-wait hint: lets the sibling hyperthread run and saves power in a
// wait loop on another thread's store.
#pragma once

namespace herd::rt {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace herd::rt
