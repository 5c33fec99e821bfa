// The fd readiness hook the net layer builds on. Every fd is registered
// edge-triggered once, for its whole life, on the runtime's shared epoll; a
// worker that polls (busy workers every 61 fibers or 1 ms, idle ones before
// parking) calls on_ready on its own thread.
#pragma once
#include <cstddef>
#include <cstdint>

namespace herd::rt {

struct io_source {
  // Called on a worker (never inside a fiber) with the epoll event mask. Must
  // not block. The source must stay alive until a grace period after
  // io_deregister (use rt::retire to free it).
  void (*on_ready)(io_source* self, uint32_t events) noexcept = nullptr;
  // Optional. The poller calls it for the sources one and two events ahead of
  // the one it dispatches (stage 0 two ahead, then stage 1 one ahead; the
  // source's own first line was prefetched four ahead), so that an on_ready
  // that follows pointers (socket -> its owner's slot -> the owner's control
  // block) finds them loaded: a batch of ready sources otherwise pays each
  // of those misses in turn. Must only read and prefetch; never blocks.
  void (*prefetch)(const io_source* self, int stage) noexcept = nullptr;
};

// Any thread. EPOLLET is always added. Returns 0 or -errno.
int io_register(int fd, io_source* src, uint32_t events) noexcept;
// Any thread. Call before close(fd). Returns 0 or -errno.
int io_deregister(int fd) noexcept;

// send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT): the bytes sent or -errno.
// Inside a fiber on a worker whose send ring is open, the send is queued
// with the worker's other sends and the fiber suspends until the batch went
// to the kernel (runtime_options::batch_sends); elsewhere it is send(2) now.
// The bytes must stay put until it returns (they do: the caller waits).
long send_batched(int fd, const void* p, std::size_t n) noexcept;

}  // namespace herd::rt
