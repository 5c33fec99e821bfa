// connbench's churn mode: what one connect -> round trip -> close cycle costs
// a server that already holds H connections (see README.md, "Churn").
#pragma once
#include "worker.hpp"

namespace connbench {

struct ChurnConfig {
  int hold = 0;          // H: connections held open (or ghosts) for the whole run
  bool ghost = false;    // hold ghosts (churn_server only) instead of open sockets
  int cycles = 10000;    // C: per measurement (sequential, then concurrent)
  int concurrency = 32;  // threads running cycles at once in the concurrent measurement
  double settle = 2;     // seconds at least between the hold and the cycles (then: until the server is idle)
};

// Runs the hold phase and both measurements; prints one RESULT line per
// measurement. Returns the exit status (1 when the hold or a cycle failed).
int run_churn(const Config& cfg, const ChurnConfig& ch);

}  // namespace connbench
