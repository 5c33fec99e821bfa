// Test hooks: herd's own tests only. Not installed (the include directory is
// runtime/testing, which only herd's test targets see), so no user build
// links against a hook, and none of them costs the scheduler's fast path.
#pragma once
#include <cstdint>

namespace herd::rt::testing {

// From a fiber: suspends it and resumes it on a different worker (when the
// runtime has more than one), so tests can check what survives a migration.
void migrate();

}  // namespace herd::rt::testing
