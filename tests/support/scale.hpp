// Test sizes: HERD_TEST_SCALE=full (default) or small (sanitizers, quick runs).
#pragma once
#include <cstddef>

namespace herd::test {

bool small_scale() noexcept;
// full when HERD_TEST_SCALE != small, else small.
std::size_t scaled(std::size_t full, std::size_t small) noexcept;
// The worker counts scheduler tests run at.
inline constexpr unsigned worker_counts[] = {1, 2, 4};

}  // namespace herd::test
