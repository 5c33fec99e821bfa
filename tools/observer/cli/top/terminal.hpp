// The terminal while `top` runs: raw input (no echo, no line buffering; ISIG
// stays on so Ctrl-C is still SIGINT), the alternate screen, a hidden cursor.
//
// Restoring it is the one thing that must never be skipped, so it happens
// on every way out:
//   - the destructor (q, and any exception such as the node going away);
//   - SIGINT, SIGTERM, SIGHUP, SIGQUIT: the handler restores the terminal
//     itself (write(2) and tcsetattr(3) are async-signal-safe) and re-raises
//     the signal with its default action, so the parent shell sees the
//     usual "killed by SIGINT" status.
// Those signals are blocked while a frame is written, so a restore never
// lands inside a half-written escape sequence.
// SIGWINCH only wakes the event loop (a byte on wake_fd()).
//
// One instance at a time (the handlers use process-wide state).
#pragma once
#include <string>

namespace observer_cli {

struct screen_size {
  int rows = 24;
  int cols = 80;
};

class terminal {
 public:
  // Throws usage_error when stdin or stdout is not a terminal.
  terminal();
  ~terminal();
  terminal(const terminal&) = delete;
  terminal& operator=(const terminal&) = delete;

  screen_size size() const;
  // Readable after SIGWINCH; drain it with take_resize().
  int wake_fd() const;
  bool take_resize();
  // Replaces the screen with `frame` (lines already cut to the width).
  void draw(const std::string& frame);
  // Reads what is available on stdin (non-blocking after poll said so).
  std::string read_input();
};

}  // namespace observer_cli
