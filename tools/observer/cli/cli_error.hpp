// The two ways herd-observer fails, mapped to its exit codes by main():
// usage_error -> 2 (with a usage line), node_failure -> 1 (the node is missing,
// gone, silent, or answered badly). Both carry one line, without the
// "herd-observer: " prefix.
#pragma once
#include <stdexcept>
#include <string>

namespace observer_cli {

struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct node_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The node answered "ok":false: the connection is fine, the request was not.
// `top` shows these (a process that exited meanwhile) and carries on.
struct node_error_reply : node_failure {
  node_error_reply(std::string code_, const std::string& what) : node_failure(what), code(std::move(code_)) {}
  std::string code;  // the protocol's error code: noproc, not_found, failed...
};

}  // namespace observer_cli
