// Reports a fiber's stack overflow (a fault in a stack guard) and aborts.
//
// The report is one line on stderr, written from the SIGSEGV handler on the thread's alternate
// stack (the fiber's own stack is exhausted by then):
//   herd: stack overflow in actor <1.0> name=foo: stack 65536 bytes, fault at 0x7f..., guard 0x7f...-0x7f...
// A fault outside every guard is not ours: the handler puts back the handler it replaced (or
// SIG_DFL) and returns, so the fault repeats and crashes as it would have (or reaches ASan).
#pragma once

#include <cstddef>

namespace herd::rt {

class stack_allocator;

// Writes who is running on the calling thread, e.g. "pid <1.0> name=foo module=bar v2"; returns
// the length written (at most cap; a NUL is not needed). The report reads "in actor <1.0> ...":
// a leading "pid " is dropped. Must be async-signal-safe: no locks, no allocation, no stdio.
using overflow_describer = size_t (*)(char* buf, size_t cap) noexcept;

// Installs the SIGSEGV and SIGBUS handlers (SA_SIGINFO | SA_ONSTACK) on the first call, and on
// every call makes `allocator` the one whose guards are recognised (nullptr: none; destroying
// the allocator also detaches it). Call at start-up, from one thread, before faults can happen.
void install_overflow_handler(stack_allocator* allocator);

// Registers (or, with nullptr, removes) the describer. Any thread.
void set_overflow_describer(overflow_describer describer) noexcept;

// Stops recognising `allocator`'s guards if it is the installed one. ~stack_allocator calls it,
// so a fault after the allocator is gone never reads freed descriptors.
void forget_overflow_allocator(const stack_allocator* allocator) noexcept;

// Gives the calling thread a 64 KiB alternate signal stack (from mmap, with a guard page below
// it) unless it already has one of at least 16 KiB (e.g. ASan's). Idempotent per thread. Every
// thread that runs fibers must call it: workers and blocking-pool threads, at thread start.
// Returns false if the stack could not be mapped.
bool install_thread_altstack();

// Undoes install_thread_altstack() on the calling thread, at thread exit; leaves an alternate
// stack that was not installed by it alone.
void remove_thread_altstack() noexcept;

namespace detail {
// The report line without the trailing abort, for tests. Async-signal-safe; returns its length.
size_t format_overflow_report(char* buf, size_t cap, const char* who, size_t who_len, size_t stack_bytes,
                              const void* fault, const void* guard_lo, const void* guard_hi) noexcept;
}  // namespace detail

}  // namespace herd::rt
