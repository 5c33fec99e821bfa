#include "sched/parker.hpp"

#include "io/poller.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ctime>

namespace herd::rt {
namespace {

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, int timeout_ms) noexcept {
  timespec ts{};
  timespec* tp = nullptr;
  if (timeout_ms >= 0) {
    ts.tv_sec = timeout_ms / 1000;
    ts.tv_nsec = (timeout_ms % 1000) * 1000000L;
    tp = &ts;
  }
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, tp,
          nullptr, 0);
}

void futex_wake(std::atomic<uint32_t>* word) noexcept {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr,
          0);
}

}  // namespace

void parker::park(int timeout_ms, poller* io) noexcept {
  uint32_t mode = io ? parked_epoll : parked_futex;
  uint32_t expected = empty;
  // seq_cst: pairs with unpark()'s exchange; whichever comes second sees the other.
  if (!st_.compare_exchange_strong(expected, mode, std::memory_order_seq_cst)) {
    st_.store(empty, std::memory_order_relaxed);  // consumed a notification
    return;
  }
  if (io) {
    io->poll(timeout_ms);
  } else if (timeout_ms != 0) {
    futex_wait(&st_, mode, timeout_ms);
  }
  // acquire: what the unparker published before its exchange is visible.
  st_.exchange(empty, std::memory_order_acquire);
}

void parker::unpark(poller& io) noexcept {
  uint32_t prev = st_.exchange(notified, std::memory_order_seq_cst);
  if (prev == parked_futex) futex_wake(&st_);
  else if (prev == parked_epoll) io.notify();
}

}  // namespace herd::rt
