// Where compact fibers' frames wait (compact_stacks.hpp): blocks in 64-byte
// steps cut from 4 MiB chunks, each chunk's pages faulted in on the blocking
// pool before the chunk is handed out. A million callers parked in `call`
// copied out 1,056 bytes each (832 now); from mimalloc that was a 1,280-byte
// block in memory touched for the first time on the worker's critical path
// (~0.3 page faults a caller, each 7-11 µs on a virtualised host). Here it
// was 1,088 bytes in memory another core faulted in ahead.
//
// Invariants: one spinlock guards the free lists, the bump pointer and the
// chunk list. A chunk is prepared (mapped, populated, touched) entirely by the
// background job before it is published under that lock, so no touch races a
// user. Blocks above max_pooled come from herd::alloc. When the last block is
// freed, every chunk but the first is unmapped (a burst's memory goes back).
#pragma once
#include <herd/runtime/thread_safety.hpp>

#include "sched/spinlock.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace herd::rt {

class frame_store {
 public:
  static constexpr uint32_t granule = 64;
  static constexpr uint32_t max_pooled = 4096;
  static constexpr std::size_t chunk_bytes = std::size_t{4} << 20;

  frame_store() = default;
  ~frame_store();
  frame_store(const frame_store&) = delete;
  frame_store& operator=(const frame_store&) = delete;

  // Where to prepare chunks ahead (the runtime's blocking pool). Set before use.
  void set_background(void (*run)(void* ctx, void (*job)(void*), void* arg), void* ctx) noexcept {
    background_ = run;
    background_ctx_ = ctx;
  }

  // Any thread. A block of at least n bytes; *cap says how many. Never null
  // (throws std::bad_alloc like herd::alloc when memory cannot be had).
  char* allocate(uint32_t n, uint32_t* cap);
  // Any thread. p from allocate with that cap (or nullptr).
  void deallocate(char* p, uint32_t cap) noexcept;

 private:
  struct free_block {
    free_block* next;
  };
  char* map_chunk(bool prefault) noexcept;
  void prepare_ahead() HERD_REQUIRES(m_);
  static void prepare_job(void* self) noexcept;

  spinlock m_;
  free_block* free_[max_pooled / granule] HERD_GUARDED_BY(m_) = {};
  char* bump_ HERD_GUARDED_BY(m_) = nullptr;
  char* end_ HERD_GUARDED_BY(m_) = nullptr;
  char* prepared_ HERD_GUARDED_BY(m_) = nullptr;
  bool preparing_ HERD_GUARDED_BY(m_) = false;
  uint64_t live_ HERD_GUARDED_BY(m_) = 0;
  std::vector<char*> chunks_ HERD_GUARDED_BY(m_);
  void (*background_)(void*, void (*)(void*), void*) = nullptr;
  void* background_ctx_ = nullptr;
};

}  // namespace herd::rt
