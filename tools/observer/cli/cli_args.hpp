// The command line: `herd-observer --socket PATH COMMAND [ARGS] [--json]`.
// Options may come before or after the command (`top --socket P` reads as
// well as `--socket P top`). Everything the node would reject for its shape
// (a bad --limit, an unknown sort key, a pid that is not <i.g>) is rejected
// here first, so a typo is exit 2 and never reaches a node.
#pragma once
#include "observer_json.hpp"

#include <string>

namespace observer_cli {

struct invocation {
  std::string socket;
  bool as_json = false;  // --json: print the raw result object instead of a table
  std::string command;   // a protocol request name, or "top"
  json request;          // the request's fields, without v/id (null for top)
  long trace_timeout_ms = 0;  // trace only: how long the node may keep tracing
};

// Throws usage_error. Exits 0 after printing the help for -h/--help.
invocation parse_args(int argc, char** argv);

// The usage text printed with every usage error (several lines).
const char* usage_text();

}  // namespace observer_cli
