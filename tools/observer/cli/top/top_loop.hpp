// `herd-observer top`: the full-screen live view (see top_loop.cpp).
#pragma once
#include "cli_args.hpp"

namespace observer_cli {

// Returns the exit code (0 on q); throws node_failure when the node goes
// away or answers badly, with the terminal already restored.
int run_top(const invocation& inv);

}  // namespace observer_cli
