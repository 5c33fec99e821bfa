// See send_ring.hpp for the design and its invariants. Raw io_uring system
// calls (the ABI in <linux/io_uring.h>) rather than liburing: the three
// operations used here are a few lines each, and an installed static herd
// then needs no extra library at link time.
#include "io/send_ring.hpp"

#include <linux/io_uring.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace herd::rt {
namespace {

int uring_setup(unsigned entries, io_uring_params* p) noexcept {
  return static_cast<int>(syscall(__NR_io_uring_setup, entries, p));
}

int uring_enter(int fd, unsigned submit, unsigned wait, unsigned flags) noexcept {
  return static_cast<int>(syscall(__NR_io_uring_enter, fd, submit, wait, flags, nullptr, 0));
}

int uring_register(int fd, unsigned op, void* arg, unsigned n) noexcept {
  return static_cast<int>(syscall(__NR_io_uring_register, fd, op, arg, n));
}

unsigned load_acquire(const unsigned* p) noexcept {
  return std::atomic_ref<const unsigned>(*p).load(std::memory_order_acquire);
}

void store_release(unsigned* p, unsigned v) noexcept {
  std::atomic_ref<unsigned>(*p).store(v, std::memory_order_release);
}

bool send_supported(int fd) noexcept {
  constexpr unsigned n_ops = 256;
  std::size_t len = sizeof(io_uring_probe) + n_ops * sizeof(io_uring_probe_op);
  auto* probe = static_cast<io_uring_probe*>(std::calloc(1, len));
  if (!probe) return false;
  bool ok = uring_register(fd, IORING_REGISTER_PROBE, probe, n_ops) == 0 && probe->last_op >= IORING_OP_SEND &&
            (probe->ops[IORING_OP_SEND].flags & IO_URING_OP_SUPPORTED);
  std::free(probe);
  return ok;
}

}  // namespace

send_ring::~send_ring() { close_all(); }

void send_ring::close_all() noexcept {
  if (sqes_) munmap(sqes_, sqes_len_);
  if (cq_map_ && cq_map_ != sq_map_) munmap(cq_map_, cq_map_len_);
  if (sq_map_) munmap(sq_map_, sq_map_len_);
  if (fd_ >= 0) ::close(fd_);
  sqes_ = cq_map_ = sq_map_ = nullptr;
  fd_ = -1;
}

bool send_ring::open() noexcept {
  io_uring_params p{};
  // Single issuer and no task-work interrupts where the kernel knows them
  // (6.0, 5.19); submit-all so one bad descriptor does not stop the rest.
  p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SUBMIT_ALL;
  int fd = uring_setup(capacity, &p);
  if (fd < 0 && errno == EINVAL) {
    p = io_uring_params{};
    fd = uring_setup(capacity, &p);
  }
  if (fd < 0) return false;
  fd_ = fd;
  if (!(p.features & IORING_FEAT_NODROP) || !send_supported(fd)) {
    close_all();
    return false;
  }
  sq_map_len_ = p.sq_off.array + p.sq_entries * sizeof(unsigned);
  cq_map_len_ = p.cq_off.cqes + p.cq_entries * sizeof(io_uring_cqe);
  bool single = p.features & IORING_FEAT_SINGLE_MMAP;
  if (single && cq_map_len_ > sq_map_len_) sq_map_len_ = cq_map_len_;
  void* sq = mmap(nullptr, sq_map_len_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
  if (sq == MAP_FAILED) {
    close_all();
    return false;
  }
  sq_map_ = sq;
  void* cq = sq;
  if (!single) {
    cq = mmap(nullptr, cq_map_len_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_CQ_RING);
    if (cq == MAP_FAILED) {
      close_all();
      return false;
    }
  }
  cq_map_ = cq;
  sqes_len_ = p.sq_entries * sizeof(io_uring_sqe);
  void* sqes = mmap(nullptr, sqes_len_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
  if (sqes == MAP_FAILED) {
    close_all();
    return false;
  }
  sqes_ = sqes;
  auto* s = static_cast<char*>(sq);
  auto* c = static_cast<char*>(cq);
  sq_tail_ = reinterpret_cast<unsigned*>(s + p.sq_off.tail);
  sq_mask_ = reinterpret_cast<unsigned*>(s + p.sq_off.ring_mask);
  sq_array_ = reinterpret_cast<unsigned*>(s + p.sq_off.array);
  cq_head_ = reinterpret_cast<unsigned*>(c + p.cq_off.head);
  cq_tail_ = reinterpret_cast<unsigned*>(c + p.cq_off.tail);
  cq_mask_ = reinterpret_cast<unsigned*>(c + p.cq_off.ring_mask);
  cqes_ = c + p.cq_off.cqes;
  return true;
}

void send_ring::add(int fd, const void* p, std::size_t n, void* tag) noexcept {
  // Only this thread writes the SQ tail; the kernel reads it after the
  // release in flush().
  unsigned tail = *sq_tail_ + pending_;
  unsigned idx = tail & *sq_mask_;
  auto* sqe = static_cast<io_uring_sqe*>(sqes_) + idx;
  std::memset(sqe, 0, sizeof *sqe);
  sqe->opcode = IORING_OP_SEND;
  sqe->fd = fd;
  sqe->addr = reinterpret_cast<uint64_t>(p);
  sqe->len = static_cast<uint32_t>(n > 0x7fffffffu ? 0x7fffffffu : n);  // a short send, as send(2) may make
  sqe->msg_flags = MSG_NOSIGNAL | MSG_DONTWAIT;
  sqe->user_data = reinterpret_cast<uint64_t>(tag);
  sq_array_[idx] = idx;
  ++pending_;
}

void send_ring::flush(done_fn done, void* ctx) noexcept {
  const unsigned n = pending_;
  if (n == 0) return;
  store_release(sq_tail_, *sq_tail_ + n);
  pending_ = 0;
  unsigned to_submit = n;
  unsigned reaped = 0;
  while (reaped < n) {
    int r = uring_enter(fd_, to_submit, n - reaped, IORING_ENTER_GETEVENTS);
    if (r < 0) {
      int e = errno;
      // Interrupted, or the kernel short of memory for a moment: what was
      // consumed stays consumed; ask again for the rest. Anything else means
      // the ring itself is broken, and the kernel may still read the queued
      // entries' buffers: nothing safe is left to do.
      if (e != EINTR && e != EAGAIN && e != EBUSY) {
        std::fprintf(stderr, "herd: io_uring_enter failed: %s\n", std::strerror(e));
        std::abort();
      }
    } else {
      to_submit -= static_cast<unsigned>(r) < to_submit ? static_cast<unsigned>(r) : to_submit;
    }
    unsigned head = *cq_head_;
    unsigned tail = load_acquire(cq_tail_);
    for (; head != tail; ++head) {
      auto* cqe = static_cast<io_uring_cqe*>(cqes_) + (head & *cq_mask_);
      void* tag = reinterpret_cast<void*>(cqe->user_data);
      int res = cqe->res;
      ++reaped;
      done(ctx, tag, res);
    }
    store_release(cq_head_, head);
  }
}

}  // namespace herd::rt
