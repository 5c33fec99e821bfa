// How a supervisor restarts its children and when it gives up (OTP's
// supervisor flags).
//
//   sup::flags f{.strategy = sup::rest_for_one, .intensity = 3, .period = 10s};
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace herd::supervisor {

enum class restart_strategy : uint8_t {
  one_for_one,        // restart the child that ended
  one_for_all,        // stop all the others (in reverse order), restart all (in order)
  rest_for_one,       // stop those started after it, restart it and them
  simple_one_for_one, // one_for_one over many dynamic children of one spec
};
inline constexpr restart_strategy one_for_one = restart_strategy::one_for_one;
inline constexpr restart_strategy one_for_all = restart_strategy::one_for_all;
inline constexpr restart_strategy rest_for_one = restart_strategy::rest_for_one;
inline constexpr restart_strategy simple_one_for_one = restart_strategy::simple_one_for_one;

struct flags {
  restart_strategy strategy = restart_strategy::one_for_one;
  // More than `intensity` restarts within `period` make the supervisor stop
  // its children and exit with `shutdown`; its own supervisor decides next.
  unsigned intensity = 1;
  std::chrono::milliseconds period{5000};
  std::string name{};  // register the supervisor under this name
  // herd only: a child still alive this long after exit(child, kill) is
  // reported as "kill pending" (it has not reached a blocking point); the
  // report repeats with the wait doubling, and the supervisor keeps waiting.
  std::chrono::milliseconds kill_report_after{1000};
};

const char* to_string(restart_strategy s) noexcept;

}  // namespace herd::supervisor
