// sup::flags{.period = 5}: 5 what? The period is a std::chrono duration.
#include <herd/supervisors/flags.hpp>

#include <chrono>

using namespace std::chrono_literals;

herd::supervisor::flags f() {
#ifdef HERD_RIGHT_WAY
  return {.intensity = 3, .period = 5s};
#else
  return {.intensity = 3, .period = 5};
#endif
}
