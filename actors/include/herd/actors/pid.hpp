// A process identifier: a slot in the node's process table plus that slot's
// generation. A pid whose process has exited never names another process:
// the slot's generation moves on when it is reused (and a slot whose
// generation would wrap is retired). Prints as <index.generation>.
//
// Indices from remote_pid_bit up name processes on other nodes: entries of
// the distribution layer's table of remote pids (herd::dist), interned so one
// remote process always has the same herd::pid. Such a pid prints as Erlang
// prints it, <N.id.serial> (N: the node's number here).
#pragma once
#include <compare>
#include <cstdio>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace herd {

namespace detail {
// <N.id.serial> for a remote pid (actors/src/remote.cpp asks the dist layer).
std::string remote_pid_to_string(uint32_t index, uint32_t generation);
}  // namespace detail

inline constexpr uint32_t remote_pid_bit = 0x8000'0000u;

struct pid {
  uint32_t index = UINT32_MAX;
  uint32_t generation = 0;

  constexpr bool valid() const noexcept { return index != UINT32_MAX; }
  constexpr explicit operator bool() const noexcept { return valid(); }
  constexpr bool is_remote() const noexcept { return valid() && (index & remote_pid_bit) != 0; }
  constexpr uint64_t value() const noexcept { return (uint64_t(generation) << 32) | index; }
  friend constexpr auto operator<=>(const pid&, const pid&) = default;
  std::string to_string() const {
    if (is_remote()) return detail::remote_pid_to_string(index, generation);
    char buf[32];
    int n = std::snprintf(buf, sizeof buf, "<%u.%u>", index, generation);
    return std::string(buf, static_cast<std::size_t>(n));
  }
  friend std::ostream& operator<<(std::ostream& os, const pid& p) { return os << p.to_string(); }
};

inline constexpr pid no_pid{};

}  // namespace herd

template <>
struct std::hash<herd::pid> {
  std::size_t operator()(const herd::pid& p) const noexcept { return std::hash<uint64_t>{}(p.value()); }
};
