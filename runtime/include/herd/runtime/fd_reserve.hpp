// A descriptor handed over inside the process without a thief.
//
// A node out of descriptors still answers its observer: the observer keeps
// one spare descriptor and, to accept a client, closes the spare and accepts
// in its place. Between that close and that accept the slot is free, and
// any thread's accept4 or open can take it. net's acceptors retry accept4
// every 100 ms while out of descriptors; with the observer's thread
// preempted between the two calls on a busy machine, one did take the slot,
// and the observer had no descriptor until a connection closed (a CI run of
// the fd-exhaustion load test: `listeners` unanswered for 5 s).
//
// The gate: the node's acceptors take descriptors only between try_enter()
// and leave(); hand_over(f) runs f with no acceptor between the two and none
// let in until f returns. An acceptor refused waits a moment and retries:
// a hand-over is a close and an accept (microseconds), and only happens
// while the process is out of descriptors.
//
// Memory ordering: the Dekker pattern. try_enter increments the takers
// count and then reads the hand-over count; hand_over increments the
// hand-over count and then reads the takers count; all four are seq_cst, so
// at least one side sees the other. The decrements are release: what a
// taker or f did (the descriptor table) is the kernel's, ordered by the
// syscalls themselves.
//
// It does not stop a thread that takes descriptors outside the gate (a
// user's open(2) in a blocking call, a library's socket): the observer's
// spare is then lost until a descriptor frees, as before.
#pragma once
#include <utility>

namespace herd::rt::fd_reserve {

// Any thread. True: take descriptors, then leave(). False: a hand-over is
// under way; take none now.
[[nodiscard]] bool try_enter() noexcept;
void leave() noexcept;

// try_enter() for a scope: leave() on the way out, by return or throw.
class taker {
 public:
  taker() noexcept : in_(try_enter()) {}
  ~taker() {
    if (in_) leave();
  }
  taker(const taker&) = delete;
  taker& operator=(const taker&) = delete;
  explicit operator bool() const noexcept { return in_; }

 private:
  bool in_;
};

// Any thread that may wait (never a worker's fiber: it spins with
// sched_yield until the takers inside have left).
void begin_hand_over() noexcept;
void end_hand_over() noexcept;

template <class F>
decltype(auto) hand_over(F&& f) {
  struct ender {
    ~ender() { end_hand_over(); }
  };
  begin_hand_over();
  ender e;
  return std::forward<F>(f)();
}

}  // namespace herd::rt::fd_reserve
