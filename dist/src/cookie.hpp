// The node's cookie: given, or ~/.erlang.cookie as erl reads it — refused when
// others may read it, created (20 random capitals, mode 0400) when missing.
#pragma once
#include <herd/dist/node.hpp>

#include <string>

namespace herd::dist::detail {

// Any thread (file I/O: call it where blocking briefly is fine).
result<std::string> read_cookie_file(const std::string& path);
std::string default_cookie_path();

}  // namespace herd::dist::detail
