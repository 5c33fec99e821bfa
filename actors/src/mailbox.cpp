#include "mailbox.hpp"

namespace herd::detail {

mailbox::batch mailbox::reverse(message* newest) noexcept {
  batch b;
  b.newest = newest;
  message* oldest = nullptr;
  uint32_t kinds = 0;
  while (newest) {
    message* n = next_of(newest);
    kinds |= newest->kind;
    newest->next.store(oldest, std::memory_order_relaxed);
    oldest = newest;
    newest = n;
  }
  b.oldest = oldest;
  b.all_user = kinds == 0;
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
