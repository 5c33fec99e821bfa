// The node's one epoll instance. Every fd is registered edge-triggered for its
// life; whoever holds the token polls (a busy worker without blocking every 61
// fibers or 1 ms; an idle worker blocks in it until its next timer). An
// eventfd in the same set lets unpark() reach a worker blocked in epoll_wait.
// The dispatch of a batch prefetches ahead of itself (the source four events
// ahead, io_source::prefetch's stages two and one ahead), so the misses of
// consecutive ready sources overlap instead of adding up.
#pragma once
#include <herd/runtime/io.hpp>

#include <atomic>
#include <cstdint>

namespace herd::rt {

class poller {
 public:
  poller();
  ~poller();
  poller(const poller&) = delete;
  poller& operator=(const poller&) = delete;

  int add(int fd, io_source* src, uint32_t events) noexcept;
  int del(int fd) noexcept;

  // Any thread. Only one thread at a time holds the token and may poll.
  bool try_acquire() noexcept {
    // acquire: pairs with release(): the previous holder's dispatches are visible.
    return !busy_.exchange(true, std::memory_order_acquire);
  }
  void release() noexcept { busy_.store(false, std::memory_order_release); }
  // Any thread, a hint: whether someone holds the token (polls, or blocks in
  // epoll_wait) right now.
  bool held() const noexcept { return busy_.load(std::memory_order_relaxed); }

  // Token holder. Waits up to timeout_ms (-1: forever, 0: not at all) and
  // dispatches what is ready, at most max_events (1..256) sources: what is
  // left stays in the kernel's ready list, in its order. Returns the number
  // of sources dispatched.
  int poll(int timeout_ms, int max_events = 256) noexcept;

  // Any thread: wakes the token holder out of a blocking poll().
  void notify() noexcept;

  bool has_sources() const noexcept { return sources_.load(std::memory_order_relaxed) > 0; }

  // Poll epochs, for reclamation (qsbr.hpp). A parked worker polls while it
  // is offline, so an event it took from epoll_wait (an io_source pointer) or
  // a process it looks up in on_ready is not covered by the quiescent-state
  // counts: a grace period must also wait for every poll that had begun when
  // it started. begun(): polls started (seq_cst, bumped before epoll_wait);
  // ended(): the number of the last poll whose dispatch finished.
  uint64_t begun() const noexcept { return begun_.load(std::memory_order_seq_cst); }
  uint64_t ended() const noexcept { return ended_.load(std::memory_order_seq_cst); }
  uint64_t polls() const noexcept { return begun_.load(std::memory_order_relaxed); }

 private:
  int epfd_ = -1;
  int evfd_ = -1;
  std::atomic<bool> busy_{false};
  std::atomic<int64_t> sources_{0};
  std::atomic<uint64_t> begun_{0};  // written by the token holder only
  std::atomic<uint64_t> ended_{0};  // written by the token holder only
};

}  // namespace herd::rt
