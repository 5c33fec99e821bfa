// The registry's side of a process: its interned name. See names.cpp.
#pragma once
#include <string>
#include <string_view>

namespace herd::detail {

struct process;

// Immutable once made; freed a grace period after the name is released, so
// readers (the overflow report, the observer) may read it without a lock.
struct interned_name {
  std::string text;
};

// Registers p (published, alive) under name. False if taken or p has a name.
bool register_process(std::string_view name, process* p);
// At exit (after the pid is unpublished): drops p's name, if any.
void release_name(process* p) noexcept;

}  // namespace herd::detail
