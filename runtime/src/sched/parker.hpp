// A worker's park token. A worker blocks on its own futex, or — when it holds
// the poller token — in epoll_wait. The state says which, so unpark() uses the
// matching wake-up (futex_wake or the poller's eventfd):
//   empty -> parked_futex | parked_epoll   (the worker, CAS; fails if notified)
//   any   -> notified                      (unpark, exchange: the old value says how to wake)
//   any   -> empty                         (the worker, after waking)
#pragma once
#include <atomic>
#include <cstdint>

namespace herd::rt {

class poller;

class parker {
 public:
  // The owning worker. Returns after unpark(), the timeout (ms, -1: none), or
  // I/O readiness when io is given (the caller holds its token). May return
  // spuriously.
  void park(int timeout_ms, poller* io) noexcept;
  // Any thread.
  void unpark(poller& io) noexcept;

 private:
  enum : uint32_t { empty = 0, parked_futex = 1, parked_epoll = 2, notified = 3 };
  std::atomic<uint32_t> st_{empty};
};

}  // namespace herd::rt
