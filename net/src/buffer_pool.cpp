#include "buffer_pool.hpp"

#include <herd/runtime/alloc.hpp>

#include <atomic>
#include <cstring>
#include <new>

namespace herd::net::detail {
namespace {

// Per thread and size class; only the owning thread touches its lists.
struct thread_pool {
  block* head[2] = {nullptr, nullptr};
  uint32_t count[2] = {0, 0};
  ~thread_pool() {
    for (auto* h : head)
      while (h) {
        block* n = h->next;
        alloc::deallocate(h);
        h = n;
      }
  }
};

constexpr uint32_t max_cached[2] = {256, 16};  // 512 KiB + 1 MiB per thread at most
constexpr std::size_t block_bytes[2] = {small_block_bytes, large_block_bytes};

// relaxed: a statistic.
std::atomic<std::ptrdiff_t> g_cached{0};

thread_local thread_pool tl_pool;

// Not inlined, with a compiler barrier: a fiber that suspended may resume on
// another thread, and GCC may otherwise keep the old thread's TLS address.
[[gnu::noinline]] thread_pool* my_pool() noexcept {
  asm volatile("" ::: "memory");
  return &tl_pool;
}

}  // namespace

block* acquire_block(uint32_t cls) noexcept {
  thread_pool* p = my_pool();
  if (block* b = p->head[cls]) {
    p->head[cls] = b->next;
    --p->count[cls];
    g_cached.fetch_sub(1, std::memory_order_relaxed);
    return b;
  }
  void* mem;
  try {
    mem = alloc::allocate(block_bytes[cls]);
  } catch (...) {
    return nullptr;
  }
  auto* b = new (mem) block{nullptr, cls, 0};
  return b;
}

void release_block(block* b) noexcept {
  thread_pool* p = my_pool();
  uint32_t cls = b->size_class;
  if (p->count[cls] < max_cached[cls]) {
    b->next = p->head[cls];
    p->head[cls] = b;
    ++p->count[cls];
    g_cached.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  alloc::deallocate(b);
}

std::size_t cached_blocks() noexcept {
  auto n = g_cached.load(std::memory_order_relaxed);
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}

}  // namespace herd::net::detail

namespace herd::net {

const char* buffer::data() const noexcept { return b_ ? b_->bytes() : nullptr; }
char* buffer::data() noexcept { return b_ ? b_->bytes() : nullptr; }

void buffer::release() noexcept {
  if (b_) detail::release_block(b_);
  b_ = nullptr;
  size_ = 0;
}

buffer buffer::copy_of(std::string_view bytes) {
  // Larger than one large block: one heap block of the exact size would
  // need a third class; callers of copy_of pass small things, so cap it.
  uint32_t cls = bytes.size() <= detail::small_capacity ? 0 : 1;
  std::size_t n = bytes.size() < detail::large_capacity ? bytes.size() : detail::large_capacity;
  detail::block* b = detail::acquire_block(cls);
  if (!b) throw std::bad_alloc();
  if (n) std::memcpy(b->bytes(), bytes.data(), n);
  return detail::buffer_access::make(b, n);
}

}  // namespace herd::net
