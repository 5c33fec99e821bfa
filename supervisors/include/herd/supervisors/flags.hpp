// How a supervisor restarts its children and when it gives up (OTP's
// supervisor flags).
//
//   sup::flags f{.strategy = sup::rest_for_one, .intensity = 3, .period = 10s};
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <type_traits>

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

// A duration in the flags: a std::chrono::milliseconds (and usable as one)
// that any std::chrono duration converts to without loss (10s, 500ms) and a
// bare number does not — `.period = 5` is refused with a message, not read
// in a unit the reader cannot see.
class interval : public std::chrono::milliseconds {
 public:
  template <class Rep, class Period>
    requires std::is_convertible_v<std::chrono::duration<Rep, Period>, std::chrono::milliseconds>
  constexpr interval(std::chrono::duration<Rep, Period> d) : std::chrono::milliseconds(d) {}
  template <class N>
    requires std::is_arithmetic_v<N>
  interval(N) : std::chrono::milliseconds(0) {
    static_assert(!std::is_arithmetic_v<N>,
                  "herd::supervisor::flags: a period is a std::chrono duration (using namespace "
                  "std::chrono_literals; .period = 5s, or 500ms) - not a bare number");
  }
};

struct flags {
  restart_strategy strategy = restart_strategy::one_for_one;
  // More than `intensity` restarts within `period` make the supervisor stop
  // its children and exit with `shutdown`; its own supervisor decides next.
  unsigned intensity = 1;
  interval period = std::chrono::seconds(5);
  std::string name{};  // register the supervisor under this name
  // herd only: a child still alive this long after exit(child, kill) is
  // reported as "kill pending" (it has not reached a blocking point); the
  // report repeats with the wait doubling, and the supervisor keeps waiting.
  interval kill_report_after = std::chrono::seconds(1);
};

const char* to_string(restart_strategy s) noexcept;

}  // namespace herd::supervisor
