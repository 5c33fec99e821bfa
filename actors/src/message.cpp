// Message envelopes: destruction and the live-message count used by leak
// checks. The count is kept per thread (each block written by one thread,
// relaxed) so a send costs no shared read-modify-write.
#include <herd/actors/message.hpp>

#include <atomic>

namespace herd::detail {
namespace {

struct counter_block {
  std::atomic<int64_t> value{0};
  std::atomic<uint64_t> made{0};  // messages (and signals) made by this thread, ever: the observer's rate
  counter_block* next = nullptr;
};

std::atomic<counter_block*> g_blocks{nullptr};
__attribute__((tls_model("initial-exec"))) thread_local counter_block* tl_block = nullptr;

[[gnu::noinline]] counter_block* register_block() {
  auto* b = new counter_block;  // never freed: a thread's count must survive the thread
  b->next = g_blocks.load(std::memory_order_relaxed);
  // release: publishes the block to live_messages().
  while (!g_blocks.compare_exchange_weak(b->next, b, std::memory_order_release, std::memory_order_relaxed)) {
  }
  tl_block = b;
  return b;
}

}  // namespace

// Not inlined (callers may suspend and move to another worker; inside this
// function nothing does, so the thread_local is read for the right thread).
[[gnu::noinline]] void count_message(int delta) noexcept {
  counter_block* b = tl_block;
  if (__builtin_expect(!b, 0)) b = register_block();
  b->value.store(b->value.load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
  if (delta > 0) b->made.store(b->made.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

void destroy_message(message* m) noexcept {
  // The ops table lives with the type's code: read the owner before running
  // it, and drop the reference only after it has returned.
  module_anchor* owner = m->ops->owner;
  m->ops->destroy(m->payload());
  m->~message();
  alloc::deallocate(m);
  count_message(-1);
  if (__builtin_expect(owner != nullptr, 0)) module_release(owner);
}

std::ptrdiff_t live_messages_total() noexcept {
  int64_t sum = 0;
  for (counter_block* b = g_blocks.load(std::memory_order_acquire); b; b = b->next)
    sum += b->value.load(std::memory_order_relaxed);
  return static_cast<std::ptrdiff_t>(sum);
}

uint64_t messages_made_total() noexcept {
  uint64_t sum = 0;
  for (counter_block* b = g_blocks.load(std::memory_order_acquire); b; b = b->next)
    sum += b->made.load(std::memory_order_relaxed);
  return sum;
}

}  // namespace herd::detail
