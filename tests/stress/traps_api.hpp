// The interface between stress_traps (the test) and traps_module (the code under test, built
// -O2 -fPIC as a shared object that resolves herd's symbols from the test executable, as a
// user's module would). Each entry point runs its own 2-worker node and returns what it saw;
// the test asserts. Plain C layout: the module and the test agree on nothing but this file.
#pragma once

extern "C" {

struct traps_report {
  int iterations;     // checks attempted (per process, summed)
  int migrated;       // of those, how many saw worker_index() change across migrate()
  int failures;       // iterations where some check failed
  int same_worker;    // isolation: observer ran on the suspended process's worker
  int stale_direct;   // thread_local/errno read directly (no accessor) after migrate() gave
                      // the old worker's instance: the trap itself, not asserted
  int workers;        // worker count of the node that ran
  long live_messages; // herd::node::live_messages() after run() returned
  long live_processes;
  long stacks_in_use; // runtime metrics after run() returned
  char root_reason[128];
  char first_failure[256];
};

// (a) herd::self() after migrate() is still the caller's pid (several processes migrate at
//     once, so a stale per-worker read would return another process's pid).
traps_report traps_self_across_migration(int iterations, int processes);
// (b) `catch (...) { migrate(); throw; }`: the outer handler gets the same exception object;
//     current_exception()/uncaught_exceptions() are right on the new worker, also in a
//     destructor that migrates during unwinding.
traps_report traps_rethrow_across_migration(int iterations);
// (b) A process suspended inside a catch block does not lend its exception to another
//     process running on the same worker meanwhile.
traps_report traps_exception_isolation(int iterations);
// (c) A thread_local reached through a noinline accessor with a compiler barrier gives the
//     new worker's instance after migrate().
traps_report traps_thread_local_across_migration(int iterations);
// (d) errno copied right after a failing close(-1) survives migrate() in a local; errno reached
//     through a noinline accessor after migrate() is the new thread's.
traps_report traps_errno_across_migration(int iterations);

}  // extern "C"
