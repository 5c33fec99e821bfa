#include "mailbox.hpp"

namespace herd::detail {

message* mailbox::append_reversed(message* newest) noexcept {
  message* oldest = nullptr;
  message* last = newest;  // becomes the tail after the reversal
  while (newest) {
    message* n = next_of(newest);
    newest->next.store(oldest, std::memory_order_relaxed);
    oldest = newest;
    newest = n;
  }
  if (!oldest) return nullptr;
  if (save_tail) save_tail->next.store(oldest, std::memory_order_relaxed);
  else save_head = oldest;
  save_tail = last;
  return oldest;
}

void mailbox::clear() noexcept {
  drain();
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
