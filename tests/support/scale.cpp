#include <herd/runtime/sanitizers.hpp>
#include "support/scale.hpp"

#include <cstdlib>
#include <cstring>

namespace herd::test {

bool small_scale() noexcept {
  const char* s = std::getenv("HERD_TEST_SCALE");
  if (s && std::strcmp(s, "small") == 0) return true;
#if HERD_TSAN
  return true;
#else
  return false;
#endif
}

std::size_t scaled(std::size_t full, std::size_t small) noexcept { return small_scale() ? small : full; }

}  // namespace herd::test
