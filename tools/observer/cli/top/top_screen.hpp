// What `top` shows, as a pure function of its state and the screen size: no
// I/O here, so the layout can be reasoned about (and is the same) for any
// terminal. Every line is cut to the width; the frame fills the screen.
#pragma once
#include "observer_json.hpp"

#include <string>

namespace observer_cli {

enum class sort_key { reductions, memory, mailbox };
const char* sort_name(sort_key k);  // the protocol's name for it

struct top_state {
  sort_key sort = sort_key::reductions;
  bool process_view = false;      // the list, or one process
  json overview;        // last `overview` result; null before the first
  json processes;       // last `processes` result; null before the first
  std::size_t selected = 0;       // row in processes["processes"]
  std::string selected_pid;       // kept across refreshes: the row follows its process
  std::string viewed_pid;         // process view: whose
  json process;         // process view: its last `process` result; null if none
  std::string process_error;      // process view: why there is no result (it exited...)
  std::string confirm_kill_pid;   // non-empty: the "kill <pid>? y/n" prompt is up
  std::string status;             // the last action's outcome, shown above the footer
};

// How many process rows fit under the header at this size (at least 1).
std::size_t process_rows(const top_state& s, int rows, int cols);

// The whole frame: cursor home, each line cleared to its end, the rest of
// the screen cleared.
std::string render_top(const top_state& s, int rows, int cols);

}  // namespace observer_cli
