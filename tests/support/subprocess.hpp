// Runs a program to completion for a test, with posix_spawn -- never fork(): forking a
// multithreaded test binary copies locks held by other threads and can deadlock the child.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace herd::test {

struct subprocess_options {
  std::chrono::milliseconds timeout{30'000};  // then the child is killed with SIGKILL
  std::vector<std::string> env;               // "NAME=value", added to (or replacing in) ours
};

struct subprocess_result {
  bool started = false;   // false: spawn_error says why
  bool timed_out = false; // killed by us when the timeout expired
  int exit_code = -1;     // valid when exited()
  int signal = 0;         // the terminating signal, or 0
  std::string out;        // everything the child wrote to stdout
  std::string err;        // ... and to stderr
  std::string spawn_error;
  bool exited() const noexcept { return started && signal == 0 && !timed_out; }
};

// argv[0] is the program's path (no PATH search). Blocks until the child ends or is killed.
// Safe to call from any thread; pipes are close-on-exec so concurrent spawns do not leak them.
subprocess_result run_subprocess(const std::vector<std::string>& argv, const subprocess_options& options = {});

}  // namespace herd::test
