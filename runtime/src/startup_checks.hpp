// Start-up checks of the kernel and process limits that decide how many actors and
// connections a node can hold. Each message is one sentence or two, starts with "herd: " and
// names the exact command that fixes it.
#pragma once

#include "context/stack_allocator.hpp"

#include <sys/resource.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace herd::rt {

struct limits_report {
  std::vector<std::string> warnings;  // the node runs, but will hit a wall below its configuration
  std::vector<std::string> errors;    // the configuration cannot work at all
};

// Where check_limits() reads and changes limits. system() is the real process; tests pass fakes.
struct limits_source {
  std::function<std::optional<uint64_t>()> max_map_count;  // /proc/sys/vm/max_map_count
  std::function<std::optional<uint64_t>()> nr_open;        // /proc/sys/fs/nr_open
  std::function<bool(rlimit*)> get_nofile;                 // getrlimit(RLIMIT_NOFILE)
  std::function<bool(const rlimit&)> set_nofile;           // setrlimit(RLIMIT_NOFILE)
  static limits_source system();
};

// Checks vm.max_map_count against max_actors (with mprotect guards), and raises the soft
// RLIMIT_NOFILE to the hard limit, warning when the hard limit is below wanted_fds. Call once at
// node start, from one thread (it changes a process-wide limit).
limits_report check_limits(size_t max_actors, guard_kind guard, size_t wanted_fds);
limits_report check_limits(size_t max_actors, guard_kind guard, size_t wanted_fds, const limits_source& source);

// The first number in a /proc file, or nothing.
std::optional<uint64_t> read_proc_number(const char* path);

}  // namespace herd::rt
