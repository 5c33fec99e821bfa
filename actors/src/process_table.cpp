#include "process_table.hpp"

#include "process.hpp"

#include <herd/runtime/thread_safety.hpp>
#include <sys/mman.h>

#include <new>

namespace herd::detail {

process_table::process_table(std::size_t max_actors, unsigned workers)
    : cap_(max_actors + 64 * (workers + 1)), workers_(workers) {
  map_bytes_ = cap_ * sizeof(slot);
  void* p = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  // Anonymous memory is zero: an all-zero slot is a valid empty slot, so the
  // table costs nothing until slots are used.
  slots_ = static_cast<slot*>(p);
  caches_.reset(new cache[workers + 1]);
}

process_table::~process_table() { munmap(slots_, map_bytes_); }

bool process_table::refill(cache& c) {
  {
    herd::rt::lock_guard<herd::rt::mutex> g(m_);
    while (c.n < 32 && !free_.empty()) {
      c.push(free_.front());
      free_.pop_front();
    }
  }
  while (c.n < 32) {
    uint32_t i = fresh_.load(std::memory_order_relaxed);
    if (i >= cap_) break;
    // acq_rel: for_each reads fresh_ to bound its scan.
    if (fresh_.compare_exchange_weak(i, i + 1, std::memory_order_acq_rel)) c.push(i);
  }
  return c.n > 0;
}

void process_table::spill(cache& c) {
  while (c.n > cache::cap / 2) free_.push_back(c.pop());
}

bool process_table::allocate(pid& out, unsigned worker) {
  uint32_t i;
  if (worker < workers_) {
    cache& c = caches_[worker];
    if (c.n == 0 && !refill(c)) return false;
    i = c.pop();
  } else {
    herd::rt::lock_guard<herd::rt::mutex> g(m_);
    if (!free_.empty()) {
      i = free_.front();
      free_.pop_front();
    } else {
      i = fresh_.load(std::memory_order_relaxed);
      do {
        if (i >= cap_) return false;
      } while (!fresh_.compare_exchange_weak(i, i + 1, std::memory_order_acq_rel));
    }
  }
  out = pid{i, slots_[i].generation};
  return true;
}

void process_table::publish(pid p, process* proc) noexcept {
  slots_[p.index].ptr.store(proc, std::memory_order_seq_cst);
}

void process_table::unpublish(pid p) noexcept {
  slots_[p.index].ptr.store(nullptr, std::memory_order_seq_cst);
}

void process_table::release(pid p, unsigned worker) {
  slot& s = slots_[p.index];
  if (p.generation == UINT32_MAX) return;  // would wrap: retire the slot for good
  s.generation = p.generation + 1;
  if (worker < workers_) {
    cache& c = caches_[worker];
    if (c.n == cache::cap) {
      herd::rt::lock_guard<herd::rt::mutex> g(m_);
      spill(c);
    }
    c.push(p.index);
    return;
  }
  herd::rt::lock_guard<herd::rt::mutex> g(m_);
  free_.push_back(p.index);
}


void process_table::prefetch(pid p, int stage) const noexcept {
  if (p.index >= cap_) return;
  const slot& s = slots_[p.index];
  if (stage == 0) {
    __builtin_prefetch(&s);
    return;
  }
  const process* proc = s.ptr.load(std::memory_order_relaxed);
  if (!proc) return;
  // Written by the push (mbox.in_) and the wake-up (state): ask
  // for them writable. Nothing is dereferenced, and a prefetch of a block
  // freed meanwhile never faults.
  __builtin_prefetch(proc, 1);
  __builtin_prefetch(&proc->mbox, 1);
}

}  // namespace herd::detail
