#include "mailbox.hpp"

namespace herd::detail {

mailbox::batch mailbox::take_many(message* newest, uintptr_t word) noexcept {
  batch b;
  b.newest = newest;
  message* oldest = nullptr;
  uint32_t kinds = 0;
  uint64_t n = 0;
  while (newest) {
    message* older = address_of(reinterpret_cast<uintptr_t>(newest->next.load(std::memory_order_relaxed)));
    kinds |= newest->kind;
    newest->next.store(oldest, std::memory_order_relaxed);
    oldest = newest;
    newest = older;
    ++n;
  }
  b.oldest = oldest;
  b.all_user = kinds == 0;
  taken.store(taken.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  // n and the word's count agree modulo 65,536: the rest are wraps that
  // senders added to uncounted (or are about to).
  if (const uint64_t wraps = n - (word >> count_shift)) uncounted.fetch_sub(static_cast<int64_t>(wraps), std::memory_order_relaxed);
  return b;
}

void mailbox::clear_saved() noexcept {
  uint64_t n = 0;
  for (message* m = save_head; m;) {
    message* next = next_of(m);
    destroy_message(m);
    ++n;
    m = next;
  }
  save_head = save_tail = nullptr;
  mark = nullptr;
  mark_set = false;
  dequeued.store(dequeued.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

}  // namespace herd::detail
