// Test hooks. Not for production code.
#pragma once
#include <cstdint>

namespace herd::rt::testing {

// From a fiber: suspends it and resumes it on a different worker (when the
// runtime has more than one), so tests can check what survives a migration.
void migrate();

}  // namespace herd::rt::testing
