// Message envelopes: allocation, destruction and the live-message count used
// by leak checks. The count is kept per thread (each block written by one
// thread, relaxed) so a send costs no shared read-modify-write.
//
// The same per-thread block caches freed small envelopes (issue 19): a
// process that receives and sends (a ping-pong, a server's request and reply)
// reuses the envelope it just freed on the same thread, so the common message
// costs no allocator call either way. Envelopes are cached by the thread that
// frees them, whoever made them: a block only ever moves from a mailbox (the
// push and the drain order it) to the freeing thread's list, which no other
// thread reads. Bounded per class, so a thread that only receives (fan-in)
// holds at most 16 KiB a size class and gives the rest back to the allocator; flushed
// when the thread exits. Off under ASan, whose use-after-free reports a
// cache would hide.
#include <herd/actors/message.hpp>
#include <herd/runtime/sanitizers.hpp>

#include <array>
#include <atomic>
#include <type_traits>

namespace herd::detail {
namespace {

constexpr bool cache_enabled = !HERD_ASAN;
// Class c holds envelopes of (c + 1) * cache_step bytes, header included;
// every envelope of the class is allocated at that size, so any of them fits
// any message of the class. 32 steps up to 256 bytes cover a header plus a
// few strings or a small struct; larger messages go to the allocator.
constexpr std::size_t cache_step = 32;
constexpr std::size_t cache_classes = 8;
// Per class at most 16 KiB (256 envelopes of 64 bytes): enough for a
// receiver's burst of a few hundred messages to come back to its senders on
// the same worker (fan-in), at most 128 KiB a thread when every class is full.
constexpr std::size_t cache_class_bytes = 16384;
// A table, not the division: give_back asks it for every message freed.
constexpr auto cache_caps = [] {
  std::array<uint32_t, cache_classes> caps{};
  for (std::size_t c = 0; c < cache_classes; ++c) caps[c] = uint32_t(cache_class_bytes / ((c + 1) * cache_step));
  return caps;
}();
constexpr uint32_t cache_cap(std::size_t c) noexcept { return cache_caps[c]; }

struct free_envelope {
  free_envelope* next;
};

struct counter_block {
  std::atomic<int64_t> value{0};
  std::atomic<uint64_t> made{0};  // messages (and signals) made by this thread, ever: the observer's rate
  counter_block* next = nullptr;
  // Owning thread only.
  bool closed = false;  // the thread is exiting: frees go to the allocator
  uint32_t cached[cache_classes] = {};
  free_envelope* cache[cache_classes] = {};

  void close_cache() noexcept {
    closed = true;
    for (std::size_t c = 0; c < cache_classes; ++c) {
      while (free_envelope* e = cache[c]) {
        cache[c] = e->next;
        alloc::deallocate(e);
      }
      cached[c] = 0;
    }
  }
};

// Flushes the exiting thread's cache. Touched once per thread (in
// register_block), so the hot paths read only the trivial tl_block.
struct cache_closer {
  counter_block* block = nullptr;
  ~cache_closer() {
    if (block) block->close_cache();
  }
};

std::atomic<counter_block*> g_blocks{nullptr};
__attribute__((tls_model("initial-exec"))) thread_local counter_block* tl_block = nullptr;
thread_local cache_closer tl_closer;

[[gnu::noinline]] counter_block* register_block() {
  auto* b = new counter_block;  // never freed: a thread's count must survive the thread
  b->next = g_blocks.load(std::memory_order_relaxed);
  // release: publishes the block to live_messages().
  while (!g_blocks.compare_exchange_weak(b->next, b, std::memory_order_release, std::memory_order_relaxed)) {
  }
  tl_block = b;
  if constexpr (cache_enabled) tl_closer.block = b;
  return b;
}

inline counter_block* this_block() noexcept {
  counter_block* b = tl_block;
  if (__builtin_expect(!b, 0)) b = register_block();
  return b;
}

inline void add(std::atomic<int64_t>& a, int64_t d) noexcept {
  a.store(a.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
}

inline std::size_t class_of(std::size_t bytes) noexcept { return (bytes - 1) / cache_step; }

// b's cache of class c (< cache_classes): an envelope from it, or nullptr.
inline void* cache_take(counter_block* b, std::size_t c) noexcept {
  free_envelope* e = b->cache[c];
  if (e) {
    b->cache[c] = e->next;
    --b->cached[c];
  }
  return e;
}

// mem into b's cache of class c (< cache_classes), if it has room and the
// thread is not exiting. The thread that runs this may differ from the one
// that allocated mem.
inline bool cache_put(counter_block* b, void* mem, std::size_t c) noexcept {
  if (b->cached[c] >= cache_cap(c) || b->closed) return false;
  auto* e = static_cast<free_envelope*>(mem);
  e->next = b->cache[c];
  b->cache[c] = e;
  ++b->cached[c];
  return true;
}

inline void give_back(counter_block* b, void* mem, std::size_t bytes) noexcept {
  if constexpr (cache_enabled) {
    const std::size_t c = class_of(bytes);
    if (c < cache_classes && cache_put(b, mem, c)) return;
  }
  alloc::deallocate(mem);
}

// One more live message, and one more made by this thread.
inline void count_made(counter_block* b) noexcept {
  add(b->value, 1);
  b->made.store(b->made.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

}  // namespace

// Not inlined (callers may suspend and move to another worker; inside these
// functions nothing does, so the thread_local is read for the right thread).
[[gnu::noinline]] void count_message(int delta) noexcept {
  counter_block* b = this_block();
  add(b->value, delta);
  if (delta > 0) b->made.store(b->made.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

namespace {
[[gnu::noinline]] void* allocate_message_slow(std::size_t bytes) {
  counter_block* b = this_block();
  void* mem;
  const std::size_t c = class_of(bytes);
  if (cache_enabled && c < cache_classes) {
    mem = cache_take(b, c);  // a thread's first message comes here with its cache unread
    if (!mem) mem = alloc::allocate((c + 1) * cache_step);
  } else {
    mem = alloc::allocate(bytes);
  }
  count_made(b);
  return mem;
}
}  // namespace

// An envelope from this thread's cache without a call (so without register
// saves); anything else — an empty cache, a large message, a thread's first —
// in allocate_message_slow.
[[gnu::noinline]] void* allocate_message(std::size_t bytes) {
  if constexpr (cache_enabled) {
    counter_block* b = tl_block;
    const std::size_t c = class_of(bytes);
    if (__builtin_expect(b != nullptr, 1) && c < cache_classes)
      if (void* e = cache_take(b, c)) {
        count_made(b);
        return e;
      }
  }
  return allocate_message_slow(bytes);
}

namespace {
// The envelope back to this thread's cache (or the allocator), uncounted.
// Read the thread-local here only where nothing suspends before it is used.
inline void release_envelope(void* mem, std::size_t bytes) noexcept {
  counter_block* b = this_block();
  give_back(b, mem, bytes);
  add(b->value, -1);
}
}  // namespace

[[gnu::noinline]] void free_message_memory(void* mem, std::size_t bytes) noexcept { release_envelope(mem, bytes); }

namespace {
// A destructor to run, or a module's type (a reference to drop after it).
[[gnu::noinline]] void destroy_message_slow(message* m) noexcept {
  // The ops table lives with the type's code: read the owner and the size
  // before running it, and drop the reference only after it has returned.
  const message_ops* ops = m->ops;
  module_anchor* owner = ops->owner;
  const std::size_t bytes = message::payload_offset + ops->size;
  if (ops->destroy) ops->destroy(m->payload());
  m->~message();
  release_envelope(m, bytes);  // after the destructor: nothing from here on suspends
  if (__builtin_expect(owner != nullptr, 0)) module_release(owner);
}
}  // namespace

// The common message (a trivially destructible value of the host's, into
// this thread's cache) without a call on its way: so without the saves and
// restores of the registers the slow path keeps across its calls, which were
// a third of this function's instructions (issue 19).
void destroy_message(message* m) noexcept {
  static_assert(std::is_trivially_destructible_v<message>);
  const message_ops* ops = m->ops;
  if (__builtin_expect(ops->destroy != nullptr || ops->owner != nullptr, 0)) return destroy_message_slow(m);
  const std::size_t bytes = message::payload_offset + ops->size;
  if constexpr (cache_enabled) {
    counter_block* b = tl_block;
    const std::size_t c = class_of(bytes);
    if (__builtin_expect(b != nullptr, 1) && c < cache_classes && cache_put(b, m, c)) {
      add(b->value, -1);
      return;
    }
  }
  free_message_memory(m, bytes);  // out of line, a tail call: the rest of the cases
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
