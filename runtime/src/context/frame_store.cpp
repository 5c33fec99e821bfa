// Compact fibers' frame blocks (design and invariants: frame_store.hpp).
#include "context/frame_store.hpp"

#include "context/stack_allocator.hpp"  // touch_page

#include <herd/runtime/alloc.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <new>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace herd::rt {

frame_store::~frame_store() {
  lock_guard<spinlock> g(m_);
  for (char* c : chunks_) munmap(c, chunk_bytes);
  if (prepared_) munmap(prepared_, chunk_bytes);
}

char* frame_store::map_chunk(bool prefault) noexcept {
  void* p = mmap(nullptr, chunk_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  auto* c = static_cast<char*>(p);
  if (prefault) {
    // A populate, then a user-mode write to each page: on a PVM guest the
    // host builds its entry on the first user access, which the populate
    // does not make (stack_allocator::prefault_tops, same measurements).
    // Best effort: a refusal only leaves the faults to the copies.
    madvise(c, chunk_bytes, MADV_POPULATE_WRITE);
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    for (std::size_t off = 0; off < chunk_bytes; off += page) touch_page(c + off);
  }
  return c;
}

void frame_store::prepare_job(void* self) noexcept {
  auto* me = static_cast<frame_store*>(self);
  char* c = me->map_chunk(true);
  lock_guard<spinlock> g(me->m_);
  me->preparing_ = false;
  if (c && !me->prepared_) me->prepared_ = c;
  else if (c) munmap(c, chunk_bytes);
}

void frame_store::prepare_ahead() {
  if (!background_ || prepared_ || preparing_) return;
  preparing_ = true;
  background_(background_ctx_, &frame_store::prepare_job, this);
}

char* frame_store::allocate(uint32_t n, uint32_t* cap) {
  const uint32_t size = (n + granule - 1) / granule * granule;
  *cap = size;
  if (size > max_pooled) return static_cast<char*>(herd::alloc::allocate(size));
  lock_guard<spinlock> g(m_);
  ++live_;
  free_block*& list = free_[size / granule - 1];
  if (free_block* b = list) {
    list = b->next;
    return reinterpret_cast<char*>(b);
  }
  if (static_cast<std::size_t>(end_ - bump_) < size) {
    // The rest of the chunk (less than one block) is left unused.
    char* c = prepared_;
    prepared_ = nullptr;
    if (!c) c = map_chunk(false);  // the background is late: faults on this path
    if (!c) {
      --live_;
      throw std::bad_alloc();
    }
    chunks_.push_back(c);
    bump_ = c;
    end_ = c + chunk_bytes;
  }
  char* p = bump_;
  bump_ += size;
  // Half the chunk cut: the next one is prepared meanwhile.
  if (static_cast<std::size_t>(end_ - bump_) < chunk_bytes / 2) prepare_ahead();
  return p;
}

void frame_store::deallocate(char* p, uint32_t cap) noexcept {
  if (!p) return;
  if (cap > max_pooled) {
    herd::alloc::deallocate(p);
    return;
  }
  std::vector<char*> doomed;
  {
    lock_guard<spinlock> g(m_);
    auto* b = reinterpret_cast<free_block*>(p);
    free_block*& list = free_[cap / granule - 1];
    b->next = list;
    list = b;
    if (--live_ == 0 && chunks_.size() > 1) {
      // Nothing is parked: the chunks of a burst go back, the first stays.
      doomed.swap(chunks_);
      chunks_.push_back(doomed[0]);
      for (free_block*& l : free_) l = nullptr;
      bump_ = chunks_[0];
      end_ = bump_ + chunk_bytes;
    }
  }
  // Outside the lock: unmapping a burst's chunks takes milliseconds.
  for (std::size_t i = 1; i < doomed.size(); ++i) munmap(doomed[i], chunk_bytes);
}

}  // namespace herd::rt
