#include <herd/runtime/clock.hpp>

#include "time/clock_impl.hpp"

#include <time.h>

#include <limits>

namespace herd::rt {
namespace {

std::atomic<bool> g_virtual{false};
std::atomic<uint64_t> g_virtual_ms{0};
std::atomic<int64_t> g_start_ns{0};

int64_t mono_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

uint64_t calibrate() noexcept {
  int64_t n0 = mono_ns();
  uint64_t t0 = __rdtsc();
  while (mono_ns() - n0 < 2000000) {
  }
  int64_t n1 = mono_ns();
  uint64_t t1 = __rdtsc();
  uint64_t per_ms = (t1 - t0) * 1000000 / uint64_t(n1 - n0);
  return per_ms ? per_ms : 1;
}

}  // namespace

namespace clock_impl {

void start(bool virtual_time) noexcept {
  g_virtual.store(virtual_time, std::memory_order_relaxed);
  g_virtual_ms.store(0, std::memory_order_relaxed);
  g_start_ns.store(mono_ns(), std::memory_order_relaxed);
  (void)tsc_per_ms();
}

uint64_t tsc_per_ms() noexcept {
  static const uint64_t v = calibrate();
  return v;
}

void set_virtual(uint64_t ms) noexcept {
  uint64_t cur = g_virtual_ms.load(std::memory_order_relaxed);
  while (ms > cur && !g_virtual_ms.compare_exchange_weak(cur, ms, std::memory_order_relaxed)) {
  }
}

}  // namespace clock_impl

uint64_t now_ms() noexcept {
  // relaxed: the clock is only ordered by the events that read it.
  if (g_virtual.load(std::memory_order_relaxed)) return g_virtual_ms.load(std::memory_order_relaxed);
  return uint64_t(mono_ns() - g_start_ns.load(std::memory_order_relaxed)) / 1000000;
}

// Rounded up: the wheel fires a deadline once the truncated clock reaches
// it, so a timeout of d ms never ends before d ms have passed (Erlang's rule).
uint64_t deadline_after(std::chrono::milliseconds d) noexcept {
  if (d.count() <= 0) return now_ms();
  uint64_t add = static_cast<uint64_t>(d.count());
  uint64_t now;
  if (g_virtual.load(std::memory_order_relaxed)) {
    now = g_virtual_ms.load(std::memory_order_relaxed);
  } else {
    // One clock read: on this kind of VM a read costs tens of ns, and a call
    // with a timeout computes a deadline every time.
    uint64_t ns = uint64_t(mono_ns() - g_start_ns.load(std::memory_order_relaxed));
    now = ns / 1000000 + (ns % 1000000 ? 1 : 0);
  }
  return add > std::numeric_limits<uint64_t>::max() - now - 1 ? std::numeric_limits<uint64_t>::max() - 1
                                                              : now + add;
}

int64_t ms_until(uint64_t deadline_ms) noexcept {
  if (g_virtual.load(std::memory_order_relaxed)) {
    uint64_t now = g_virtual_ms.load(std::memory_order_relaxed);
    return deadline_ms > now ? int64_t(deadline_ms - now) : 0;
  }
  uint64_t ns = uint64_t(mono_ns() - g_start_ns.load(std::memory_order_relaxed));
  uint64_t now = ns / 1000000;
  if (deadline_ms <= now) return 0;
  uint64_t left = deadline_ms - now - (ns % 1000000 ? 1 : 0);  // whole ms, rounded down
  return left > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(left);
}

void advance_clock(std::chrono::milliseconds d) noexcept {
  if (d.count() > 0) g_virtual_ms.fetch_add(uint64_t(d.count()), std::memory_order_relaxed);
}

bool virtual_time() noexcept { return g_virtual.load(std::memory_order_relaxed); }

}  // namespace herd::rt
