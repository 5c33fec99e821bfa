// The observer's pacing (server.cpp, "Pacing"): a token bucket, used per
// client for requests a second and once for the observer thread's CPU time.
#pragma once
#include <algorithm>
#include <cstdint>

namespace herd::observer {

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
