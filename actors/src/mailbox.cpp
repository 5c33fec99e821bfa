#include "mailbox.hpp"

namespace herd::detail {

message* mailbox::reverse(message* newest) noexcept {
  message* oldest = nullptr;
  while (newest) {
    message* n = next_of(newest);
    newest->next.store(oldest, std::memory_order_relaxed);
    oldest = newest;
    newest = n;
  }
  return oldest;
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
