// A worker's batch of socket sends, submitted in one io_uring_enter.
//
// Why: on this machine a syscall's entry and exit cost about a microsecond
// (docs/push-gateway.md, "Syscalls per push, probed"), and a worker that
// delivers pushes to many connections made one send() each. Fibers that send
// now hand their send to their worker and suspend (suspend_reason::send);
// when the worker has nothing else to run — or the batch is full, or 32
// fibers ran since the first send was queued — it submits every send at once
// and waits for all of them, then puts the senders back on its ring (behind
// its overflow while that holds spilled fibers: worker.cpp, schedule_local)
// with their results.
//
// Invariants:
// * Only the owning worker's thread touches a ring (IORING_SETUP_SINGLE_ISSUER
//   where the kernel has it). The bytes live on the sending fiber's stack or
//   in its buffers; the fiber is suspended, held by the worker and by nothing
//   else (no queue, no waiting state), until flush() has its completion, so
//   the bytes outlive the kernel's use of them and no thief can resume it.
// * Every send carries MSG_DONTWAIT: the kernel issues it inline and answers
//   -EAGAIN when the socket is full instead of arming a poll, so flush()
//   never waits on a peer — only on the submission itself.
// * Ordering: the kernel writes a completion and then releases the CQ tail;
//   flush() reads the tail with acquire and the entries after it, and hands
//   the slots back with a release store of the head. The SQ tail is published
//   with a release store after the entries are written (the io_uring ABI).
// * open() fails (and the worker sends with send(2) as before) where io_uring
//   is refused: an old kernel, seccomp, kernel.io_uring_disabled, no
//   IORING_OP_SEND.
#pragma once
#include <cstddef>
#include <cstdint>

namespace herd::rt {

class send_ring {
 public:
  static constexpr unsigned capacity = 64;

  send_ring() = default;
  ~send_ring();
  send_ring(const send_ring&) = delete;
  send_ring& operator=(const send_ring&) = delete;

  // On the owning thread. False: io_uring is not available here.
  bool open() noexcept;
  bool is_open() const noexcept { return fd_ >= 0; }

  unsigned pending() const noexcept { return pending_; }
  bool full() const noexcept { return pending_ == capacity; }

  // Queues send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT); `tag` comes back
  // with its result. Requires !full().
  void add(int fd, const void* p, std::size_t n, void* tag) noexcept;

  // Submits everything queued and waits for every completion; calls
  // done(ctx, tag, result) for each (bytes sent or -errno). Interrupted or
  // short of memory, it asks again; any other failure of io_uring_enter
  // aborts the process: the kernel may still read queued buffers, so no
  // sender can safely be resumed.
  using done_fn = void (*)(void* ctx, void* tag, int result);
  void flush(done_fn done, void* ctx) noexcept;

 private:
  int fd_ = -1;
  unsigned pending_ = 0;
  // The shared rings (mmap'd).
  void* sq_map_ = nullptr;
  std::size_t sq_map_len_ = 0;
  void* cq_map_ = nullptr;  // == sq_map_ with IORING_FEAT_SINGLE_MMAP
  std::size_t cq_map_len_ = 0;
  void* sqes_ = nullptr;
  std::size_t sqes_len_ = 0;
  unsigned* sq_tail_ = nullptr;
  unsigned* sq_mask_ = nullptr;
  unsigned* sq_array_ = nullptr;
  unsigned* cq_head_ = nullptr;
  unsigned* cq_tail_ = nullptr;
  unsigned* cq_mask_ = nullptr;
  void* cqes_ = nullptr;
  void close_all() noexcept;
};

}  // namespace herd::rt
