// The observer's pacing (observer_server.cpp, "Pacing"): a token bucket, used per
// client for requests a second and once for the observer thread's CPU time,
// and the limits and clocks the server paces with.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ctime>

namespace herd::observer {

inline constexpr std::size_t max_clients = 16;
inline constexpr std::size_t read_chunk = 65536;
// Per client and poll round: enough for many requests, and a client that
// floods cannot keep the others waiting.
inline constexpr std::size_t read_budget = 4 * read_chunk;
// With every slot held and a client waiting, a slot holder this idle goes.
inline constexpr uint64_t contended_idle_ms = 1000;
// The least a request is charged (ns of the CPU budget): the syscalls
// around it are not measured.
inline constexpr uint64_t min_charge_ns = 20'000;
// Requests answered per loop round before the loop polls again (accepts,
// wake-ups) — fairness holds across rounds.
inline constexpr int answers_per_round = 64;
inline constexpr uint64_t round_ns = 5'000'000;  // nor for longer than this
// The shortest sleep while requests wait for tokens or CPU budget.
inline constexpr uint64_t pacing_tick_ms = 50;

inline uint64_t steady_ns() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}
inline uint64_t steady_ms() { return steady_ns() / 1'000'000; }

inline uint64_t thread_cpu_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return uint64_t(t.tv_sec) * 1'000'000'000u + uint64_t(t.tv_nsec);
}

// `rate` tokens a second up to `cap`. A taker may go below zero (a request
// costs what it costs, known only afterwards): nothing more is taken until
// the debt is paid back.
struct token_bucket {
  double tokens = 0, rate = 0, cap = 0;
  uint64_t at_ns = 0;  // the last refill (steady clock)

  void reset(double rate_per_s, double capacity, uint64_t now_ns) {
    rate = rate_per_s;
    cap = tokens = capacity;
    at_ns = now_ns;
  }
  void refill(uint64_t now_ns) {
    if (now_ns > at_ns) tokens = std::min(cap, tokens + rate * double(now_ns - at_ns) / 1e9);
    at_ns = std::max(at_ns, now_ns);
  }
  bool ready() const noexcept { return tokens > 0; }
  // Nanoseconds until ready() (after a refill at now).
  uint64_t ns_until_ready() const noexcept {
    if (tokens > 0) return 0;
    if (rate <= 0) return UINT64_MAX;
    return uint64_t((-tokens + 1e-9) / rate * 1e9) + 1;
  }
};

}  // namespace herd::observer
