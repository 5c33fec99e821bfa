// Blocks for received bytes, in two sizes, cached per thread.
//
// A read goes into a large block (64 KiB: one read drains what a typical
// socket buffer holds). When it brought few bytes (<= small_capacity) they
// are copied into a small block and the large one stays cached for the next
// read: a buffer the user keeps (a chat line) then pins 2 KiB, not 64. A
// large read keeps its block (no copy).
//
// Each thread keeps a bounded free list per size (no lock: only that thread
// touches it); a block freed on a thread whose list is full goes back to
// herd::alloc. The per-thread list is reached only through a noinline
// accessor that re-reads the thread pointer after any suspension could have
// moved the fiber (docs/design.md: "Traps of stackful code").
#pragma once
#include <herd/net/buffer.hpp>

#include <cstddef>
#include <cstdint>

namespace herd::net::detail {

struct block {
  block* next;      // free-list link (while cached)
  uint32_t size_class;  // 0: small, 1: large
  uint32_t pad;
  char* bytes() noexcept { return reinterpret_cast<char*>(this + 1); }
};
static_assert(sizeof(block) == 16);

inline constexpr std::size_t small_block_bytes = 2048;
inline constexpr std::size_t large_block_bytes = 65536;
inline constexpr std::size_t small_capacity = small_block_bytes - sizeof(block);
inline constexpr std::size_t large_capacity = large_block_bytes - sizeof(block);

// Any thread. Never throws: nullptr when memory is out.
block* acquire_block(uint32_t size_class) noexcept;
// Any thread.
void release_block(block* b) noexcept;

struct buffer_access {
  // Wraps a block holding `n` bytes into a buffer (takes ownership).
  static buffer make(block* b, std::size_t n) noexcept {
    buffer r;
    r.b_ = b;
    r.size_ = n;
    return r;
  }
};

// Blocks held by the pools of every thread (tests: idle memory).
std::size_t cached_blocks() noexcept;

}  // namespace herd::net::detail
