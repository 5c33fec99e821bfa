// The finishing worker's side of exit watchers (exit_watch.cpp).
#pragma once
#include <herd/actors/exit_reason.hpp>

namespace herd::detail {
struct process;
// After p's pid is unpublished: calls the watchers p is marked for.
void run_exit_watchers(process* p, const exit_reason& why) noexcept;
}  // namespace herd::detail
