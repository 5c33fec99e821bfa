// Everything the node sends is untrusted text: a process or listener name
// comes from a chat room, a module path from whoever loaded it. Printed raw,
// an escape sequence in it would clear the operator's screen, retitle the
// window, or draw fake output. Every human-readable line herd-observer
// prints goes through terminal_safe (`top` keeps its own ASCII-only filter,
// which also keeps its columns aligned).
#pragma once
#include "observer_json.hpp"

#include <string>
#include <string_view>

namespace observer_cli {

// `s` with every byte a terminal could act on spelled out: C0 controls
// (newline and tab too), DEL, and bytes that are not valid UTF-8 as "\xNN";
// C1 controls (U+0080..U+009F), line and paragraph separators and the bidi
// overrides that reorder what is shown as "\uNNNN". Other text, UTF-8
// included, is kept. Escaping an escaped string changes nothing.
std::string terminal_safe(std::string_view s);

// terminal_safe for a block of lines: keeps each '\n'.
std::string terminal_safe_lines(std::string_view s);

// One line of JSON that is safe to print as it is: every non-ASCII
// character and DEL escaped as "\uNNNN" (still the same JSON value).
std::string json_text(const json& j);

}  // namespace observer_cli
