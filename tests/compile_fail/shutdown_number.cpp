// child_spec{.shutdown = 5}: 5 what? A shutdown is a duration, brutal_kill or infinity.
#include <herd/supervisors/child_spec.hpp>

#include <chrono>

using namespace std::chrono_literals;

herd::supervisor::child_spec spec() {
#ifdef HERD_RIGHT_WAY
  return {.id = "w", .start = [] {}, .shutdown = 5s};
#else
  return {.id = "w", .start = [] {}, .shutdown = 5};
#endif
}
