// Test hooks: herd's own tests only. Not installed (the include directory is
// runtime/testing, which only herd's test targets see), so no user build
// links against a hook, and none of them costs the scheduler's fast path.
#pragma once
#include <cstdint>

namespace herd::rt::testing {

// From a fiber: suspends it and resumes it on a different worker (when the
// runtime has more than one), so tests can check what survives a migration.
void migrate();

// Any thread: with true, every worker's run next is open to thieves as if
// its worker were stuck in one fiber, and a worker with busy_wait set that
// runs dry spins until it finds work, however long: steal's last pass races
// the owner's take of run next all the time (run_next_theft_test).
void open_run_next(bool open);
// Any thread, while a runtime runs: thieves' attempts on run next that got
// as far as the slot (it was occupied when they looked), all workers.
uint64_t run_next_steal_attempts();

}  // namespace herd::rt::testing
