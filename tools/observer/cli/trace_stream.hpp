// `trace PID`: the node's first reply says what it traces, then one line per
// event as it happens, then a `done` line; this prints each as it arrives.
#pragma once
#include "cli_args.hpp"
#include "node_connection.hpp"

namespace observer_cli {

// Returns the exit code (0 once `done` arrived); throws node_failure.
int run_trace(node_connection& node, const invocation& inv);

}  // namespace observer_cli
