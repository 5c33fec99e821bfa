// Asymmetric fences: a store-then-load handshake (Dekker's) between a side
// that runs it millions of times a second and a side that runs it rarely.
// The frequent side orders its store before its load with a compiler fence
// only; the rare side calls membarrier(PRIVATE_EXPEDITED), which makes every
// running thread of the process execute a full barrier before it returns.
// So for any frequent-side sequence "store A; light(); load B" and a rare one
// "store B; heavy(); load A", either the rare side's load sees A's store, or
// the frequent side's load sees B's store (the barrier fell before or after
// the frequent side's store). Used by run next (run_next.hpp).
#pragma once
#include <atomic>

namespace herd::rt::asym {

// Whether heavy() works here: the first call registers the process with
// membarrier (kernel 4.14+; a seccomp filter may refuse it). Callers fall
// back to a locked instruction on the frequent side when it does not.
bool available() noexcept;

inline void light() noexcept { std::atomic_signal_fence(std::memory_order_seq_cst); }

// Only after available() returned true. False if the kernel refused (then
// nothing is ordered and the caller must not rely on the handshake).
bool heavy() noexcept;

}  // namespace herd::rt::asym
