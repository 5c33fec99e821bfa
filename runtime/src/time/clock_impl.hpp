// The runtime's clocks. now_ms() is CLOCK_MONOTONIC (or the virtual clock in
// the deterministic mode) relative to the runtime's start. The worker loop
// paces its maintenance with the TSC instead: one rdtsc per scheduling
// decision is ~10 ns, a clock_gettime ~24 ns on this kind of machine.
#pragma once
#include <atomic>
#include <cstdint>
#include <x86intrin.h>

namespace herd::rt::clock_impl {

// Called once by the runtime at start.
void start(bool virtual_time) noexcept;
// TSC ticks per millisecond (calibrated once per process).
uint64_t tsc_per_ms() noexcept;
inline uint64_t tsc() noexcept { return __rdtsc(); }
// The virtual clock (deterministic mode): moved by the worker when all fibers
// are blocked, and by tests.
void set_virtual(uint64_t ms) noexcept;

}  // namespace herd::rt::clock_impl
