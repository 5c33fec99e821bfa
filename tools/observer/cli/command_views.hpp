// The human form of each one-shot command's `result` object: aligned tables
// and key/value lists. The result comes straight from the node, so every
// accessor may throw json::exception on a missing or ill-typed
// field; main() reports that as a malformed reply (exit 1). Every string
// from the node comes out terminal_safe (terminal_text.hpp).
#pragma once
#include "observer_json.hpp"

#include <string>

namespace observer_cli {

// `command` is the request name; the text ends with '\n'.
std::string render_result(const std::string& command, const json& result);

// Shared with top: a possibly-null string field shown as "-" when null.
std::string text_or_dash(const json& v);
// A process row's registered name, else its initial call, else "-".
std::string name_or_call(const json& p);
// A process row's kind, or "-" from a node that does not send it.
std::string kind_or_dash(const json& p);
// The kill command's line: whether the process exited, and how.
std::string render_kill(const json& r);

// The process view's lines ("name   value"), shared by `process` and top.
std::string render_process(const json& p);

}  // namespace observer_cli
