// The stack-overflow report. Everything reachable from on_fault() is async-signal-safe: it
// reads atomics and immutable chunk descriptors, formats numbers by hand (printf is not
// async-signal-safe) and calls only write(2), sigaction(2) and abort().
#include "overflow_handler.hpp"

#include "stack_allocator.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace herd::rt {
namespace {

constexpr size_t altstack_size = 64 * 1024;
constexpr size_t min_foreign_altstack = 16 * 1024;

// Written at start-up, read by the handler: acquire/release pairs publish the allocator.
std::atomic<stack_allocator*> g_allocator{nullptr};
std::atomic<overflow_describer> g_describer{nullptr};
std::atomic<bool> g_installed{false};
struct sigaction g_previous_segv;  // written once, before the handler is installed
struct sigaction g_previous_bus;

struct thread_altstack {
  char* mapping = nullptr;  // our mmap, guard page included; nullptr when not ours
  size_t mapping_size = 0;
  bool done = false;
};
thread_local thread_altstack t_altstack;

struct writer {
  char* buf;
  size_t cap;
  size_t len = 0;
  void put(char c) noexcept {
    if (len < cap) buf[len++] = c;
  }
  void put(const char* s, size_t n) noexcept {
    for (size_t i = 0; i < n; ++i) put(s[i]);
  }
  void put(const char* s) noexcept { put(s, std::strlen(s)); }
  void dec(uint64_t v) noexcept {
    char digits[20];
    size_t n = 0;
    do digits[n++] = char('0' + v % 10); while (v /= 10);
    while (n) put(digits[--n]);
  }
  void hex(const void* p) noexcept {
    uint64_t v = reinterpret_cast<uintptr_t>(p);
    char digits[16];
    size_t n = 0;
    do digits[n++] = "0123456789abcdef"[v & 15]; while (v >>= 4);
    put("0x");
    while (n) put(digits[--n]);
  }
};

void write_all(int fd, const char* p, size_t n) noexcept {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= size_t(w);
  }
}

void on_fault(int sig, siginfo_t* info, void*) {
  const int saved_errno = errno;
  const stack_allocator* allocator = g_allocator.load(std::memory_order_acquire);
  const stack_slot* slot = nullptr;
  if (allocator && info->si_code > 0 && allocator->contains_guard(info->si_addr, &slot)) {
    char who[256];
    size_t who_len = 0;
    if (overflow_describer describe = g_describer.load(std::memory_order_acquire))
      who_len = std::min(describe(who, sizeof who), sizeof who);
    char line[512];
    const char* guard_lo = slot->lo - allocator->options().guard_size;
    size_t n = detail::format_overflow_report(line, sizeof line, who, who_len, slot->size(), info->si_addr,
                                              guard_lo, slot->lo);
    write_all(STDERR_FILENO, line, n);
    abort();
  }
  // Not a guard: give the signal back to whoever had it. Returning re-executes the faulting
  // instruction, which then faults into that handler (or SIG_DFL). A SIGSEGV sent by kill()
  // does not repeat by itself, so it is raised again; it is delivered once this returns.
  sigaction(sig, sig == SIGBUS ? &g_previous_bus : &g_previous_segv, nullptr);
  if (info->si_code <= 0) raise(sig);
  errno = saved_errno;
}

}  // namespace

namespace detail {
size_t format_overflow_report(char* buf, size_t cap, const char* who, size_t who_len, size_t stack_bytes,
                              const void* fault, const void* guard_lo, const void* guard_hi) noexcept {
  writer w{buf, cap};
  w.put("herd: stack overflow in ");
  if (who_len >= 4 && std::memcmp(who, "pid ", 4) == 0) {
    who += 4;
    who_len -= 4;
  }
  if (who_len) {
    w.put("actor ");
    w.put(who, who_len);
  } else {
    w.put("an unknown fiber");
  }
  w.put(": stack ");
  w.dec(stack_bytes);
  w.put(" bytes, fault at ");
  w.hex(fault);
  w.put(", guard ");
  w.hex(guard_lo);
  w.put('-');
  w.hex(guard_hi);
  if (w.len == cap) --w.len;  // keep room for the newline: a cut line is still one line
  w.put('\n');
  return w.len;
}
}  // namespace detail

void install_overflow_handler(stack_allocator* allocator) {
  g_allocator.store(allocator, std::memory_order_release);  // pairs with on_fault()
  if (g_installed.exchange(true, std::memory_order_acq_rel)) return;
  struct sigaction sa {};
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &g_previous_segv);
  sigaction(SIGBUS, &sa, &g_previous_bus);
}

void forget_overflow_allocator(const stack_allocator* allocator) noexcept {
  stack_allocator* expected = const_cast<stack_allocator*>(allocator);
  g_allocator.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
}

void set_overflow_describer(overflow_describer describer) noexcept {
  g_describer.store(describer, std::memory_order_release);  // pairs with on_fault()
}

// noinline: thread_local addresses must not be cached across a fiber switch (see
// docs/design.md, "Traps of stackful code"); these run on the thread's own stack, but stay safe if they do not.
[[gnu::noinline]] bool install_thread_altstack() {
  thread_altstack& t = t_altstack;
  if (t.done) return true;
  stack_t current{};
  if (sigaltstack(nullptr, &current) == 0 && !(current.ss_flags & SS_DISABLE) &&
      current.ss_size >= min_foreign_altstack) {
    t.done = true;  // someone else's (ASan's) and big enough; it stays theirs
    return true;
  }
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const size_t size = altstack_size + page;
  void* mem = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return false;
  mprotect(mem, page, PROT_NONE);  // a handler that overruns its stack faults, not corrupts
  stack_t ss{};
  ss.ss_sp = static_cast<char*>(mem) + page;
  ss.ss_size = altstack_size;
  if (sigaltstack(&ss, nullptr) != 0) {
    munmap(mem, size);
    return false;
  }
  t.mapping = static_cast<char*>(mem);
  t.mapping_size = size;
  t.done = true;
  return true;
}

[[gnu::noinline]] void remove_thread_altstack() noexcept {
  thread_altstack& t = t_altstack;
  if (t.mapping) {
    stack_t current{};
    if (sigaltstack(nullptr, &current) == 0 && current.ss_sp == t.mapping + (t.mapping_size - altstack_size)) {
      stack_t off{};
      off.ss_flags = SS_DISABLE;
      sigaltstack(&off, nullptr);
    }
    munmap(t.mapping, t.mapping_size);
  }
  t = thread_altstack{};
}

}  // namespace herd::rt
