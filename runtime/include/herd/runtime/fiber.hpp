// herd::rt::fiber — what the runtime schedules: a stack, a saved context and a
// run state. It knows nothing of mailboxes or links; the actors layer derives
// its process control block from it and supplies fiber_ops.
//
// The run state word (`state`):
//   waiting   (0)  parked; in no queue. Whoever moves it to scheduled enqueues it.
//   scheduled (1)  in a run queue or running. It looks for work before parking.
//   notified  (2)  scheduled, and a wake arrived meanwhile: its next park fails
//                  and it runs again instead (no lost wake-up).
//   dead      (3)  finished; wakes are ignored.
// Transitions are the functions in sched/fiber_state.hpp; every one is a
// seq_cst read-modify-write on this word, so a waker's mailbox push (before its
// RMW) is visible to the fiber after its failed park CAS (acquire), and exactly
// one of several concurrent wakers (sender, timer, exit signal) enqueues it.
#pragma once
#include <herd/runtime/timer_node.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace herd::rt {

struct stack_slot;
struct fiber;

enum class priority : uint8_t { low = 0, normal = 1, high = 2 };

enum class run_state : uint32_t { waiting = 0, scheduled = 1, notified = 2, dead = 3 };

// Bits of fiber::rt_flags the embedding may read once the fiber is dead.
inline constexpr uint8_t fiber_flag_no_stack = 1;  // woke from hibernation, no stack to be had
// Runtime-private: runs on a shared slot and parks copied out (compact_stacks.hpp).
inline constexpr uint8_t fiber_flag_compact = 2;

// What a fiber's body asks for when it returns to its base.
enum class fiber_result : uint8_t { dead, hibernate };

struct fiber_ops {
  // Runs on the fiber's own stack, from the base of a fresh context. Must not
  // let an exception escape.
  fiber_result (*run)(fiber*) noexcept;
  // Runs on the worker after a dead fiber's final switch (its stack is already
  // back in the pool). Releases whatever the embedding owns.
  void (*finished)(fiber*) noexcept;
  // Async-signal-safe: writes "pid <1.0> name=foo" for the overflow report.
  std::size_t (*describe)(const fiber*, char* buf, std::size_t cap) noexcept;
};

// The fiber's embedded timer: a receive timeout or sleep arms it on the wheel
// of the worker it parks on; it is unlinked eagerly (O(1)) when the fiber wakes.
struct fiber_timer {
  timer_node node;
  void* wheel = nullptr;  // the timer_service it is linked in (guarded by its lock)
  bool fired = false;     // written under that lock
};

struct fiber {
  std::atomic<uint32_t> state{static_cast<uint32_t>(run_state::scheduled)};
  priority prio = priority::normal;
  uint8_t rt_flags = 0;        // runtime-private
  uint16_t stack_class = 0;    // stack size class requested at spawn
  void* ctx = nullptr;         // saved context; nullptr when not started or hibernated
  stack_slot* stack = nullptr; // nullptr when hibernated
  void* side = nullptr;        // the worker-side switch state of the thread running it
  void* eh_caught = nullptr;
  const fiber_ops* ops = nullptr;
  fiber_timer timer;
  // Off the first line: every send to this fiber reads `state`, and a fiber
  // that counts a reduction per message it takes (a receiver draining a
  // backlog) would otherwise take that line from the senders' cores each time.
  uint32_t reductions_left = 0;
  uint32_t eh_uncaught = 0;    // libstdc++'s per-thread exception state, saved per fiber (with eh_caught)
  std::atomic<uint64_t> reductions{0};    // total; relaxed, for the observer
  std::atomic<uint64_t> last_run_ms{0};   // relaxed, for the observer
  std::atomic<uintptr_t> low_sp{0};       // lowest stack pointer seen at a switch; relaxed
  // The current stack's top (its initial sp), 0 while the fiber has no stack
  // (hibernated, ended). Written by whoever assigns or releases the stack,
  // relaxed: the observer's "touched = stack_top - low_sp" is a hint.
  std::atomic<uintptr_t> stack_top{0};
  // ASan's fake stack of a fiber that is switched out. Present in every
  // build: this struct is in an installed header, and a user's build mixing
  // sanitized and plain objects must see one layout (ODR).
  void* asan_fake_stack = nullptr;
  // Runtime-private: a compact fiber's state (rt::compact_state), else nullptr.
  void* compact = nullptr;

  run_state load_state() const noexcept {
    // relaxed: a hint for reports; decisions use the RMWs in fiber_state.hpp.
    return static_cast<run_state>(state.load(std::memory_order_relaxed));
  }
};

}  // namespace herd::rt
