// A node with known actors for the gdb extension's test (tests/gdb/run_gdb_test.sh):
//   gdb_test.alpha, .beta, .gamma  waiting in receive inside gdb_test_waiting_in_<name>,
//                                  alpha with 3 unmatched messages in its mailbox
//   gdb_test.sleeper               hibernated
//   gdb_test.busy                  running (spins in gdb_test_busy_loop, never yields)
//   the root                       waiting in gdb_test_root_waiting
// Prints one "actor NAME PID" line per actor, then "READY", then waits until it
// is killed (the test stops it by its pid). With --abort it aborts after READY
// instead (a core for manual use). --mprotect-guards: guard pages by mprotect,
// not MADV_GUARD_INSTALL (gdb's gcore cannot read a mapping with madvise guard
// pages in it, and then leaves the fiber stacks out of its core).
#include <herd/actors.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

using namespace std::chrono_literals;

namespace gdb_test_msgs {
struct stop {};
struct unmatched { int n; };
struct ready {};
}  // namespace gdb_test_msgs
using namespace gdb_test_msgs;

// Written after each blocking call so none of them is a tail call (whose
// caller's frame would vanish from the backtrace).
std::atomic<int> g_sink{0};
std::atomic<bool> g_spin{true};

// A few frames of distinctively named functions between the actor's body and
// its receive, so the test can see more than one frame of the actor's own code.
[[gnu::noinline]] void gdb_test_waiting_in_alpha() {
  herd::receive([](stop) {});
  g_sink.fetch_add(1);
}
[[gnu::noinline]] void gdb_test_waiting_in_beta() {
  herd::receive([](stop) {});
  g_sink.fetch_add(1);
}
[[gnu::noinline]] void gdb_test_waiting_in_gamma() {
  herd::receive([](stop) {});
  g_sink.fetch_add(1);
}
[[gnu::noinline]] void gdb_test_outer_frame(void (*fn)()) {
  fn();
  g_sink.fetch_add(1);
}
[[gnu::noinline]] void gdb_test_busy_loop() {
  while (g_spin.load(std::memory_order_relaxed)) asm volatile("pause" ::: "memory");
  g_sink.fetch_add(1);
}
[[gnu::noinline]] void gdb_test_root_waiting() {
  herd::receive([](stop) {});
  g_sink.fetch_add(1);
}

int main(int argc, char** argv) {
  bool abort_after = false, mprotect_guards = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--abort") == 0) abort_after = true;
    else if (std::strcmp(argv[i], "--mprotect-guards") == 0) mprotect_guards = true;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  herd::node n({.workers = 2, .force_mprotect_guards = mprotect_guards});
  n.run([abort_after] {
    herd::pid root = herd::self();
    struct named { const char* name; void (*fn)(); };
    const named waiting[] = {{"gdb_test.alpha", &gdb_test_waiting_in_alpha},
                             {"gdb_test.beta", &gdb_test_waiting_in_beta},
                             {"gdb_test.gamma", &gdb_test_waiting_in_gamma}};
    for (const named& w : waiting) {
      herd::pid p = herd::spawn([root, fn = w.fn] {
        herd::send(root, ready{});
        gdb_test_outer_frame(fn);
      });
      herd::register_name(w.name, p);
      std::printf("actor %s %s\n", w.name, p.to_string().c_str());
    }
    herd::pid alpha = herd::whereis("gdb_test.alpha").value();
    for (int i = 0; i < 3; ++i) herd::send(alpha, unmatched{i});

    herd::pid sleeper = herd::spawn([root]() -> herd::hibernation {
      herd::send(root, ready{});
      return herd::hibernated([] { herd::receive([](stop) {}); });
    });
    herd::register_name("gdb_test.sleeper", sleeper);
    std::printf("actor gdb_test.sleeper %s\n", sleeper.to_string().c_str());

    herd::pid busy = herd::spawn([root] {
      herd::send(root, ready{});
      gdb_test_busy_loop();
    });
    herd::register_name("gdb_test.busy", busy);
    std::printf("actor gdb_test.busy %s\n", busy.to_string().c_str());
    std::printf("actor root %s\n", root.to_string().c_str());

    for (int i = 0; i < 5; ++i) herd::receive([](ready) {});
    herd::sleep(200ms);  // let the last ones reach their receive / hibernate
    std::printf("READY\n");
    if (abort_after) std::abort();
    gdb_test_root_waiting();
  });
  return 0;
}
