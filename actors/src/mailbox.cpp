#include "mailbox.hpp"

namespace herd::detail {

message_link* mailbox::pop_link(bool& busy) noexcept {
  busy = false;
  message_link* tail = out_;
  message_link* next = tail->next.load(std::memory_order_acquire);
  if (tail == &stub_) {
    if (!next) {
      busy = in_.load(std::memory_order_seq_cst) != &stub_;
      return nullptr;
    }
    out_ = next;
    tail = next;
    next = next->next.load(std::memory_order_acquire);
  }
  if (next) {
    out_ = next;
    return tail;
  }
  if (tail != in_.load(std::memory_order_seq_cst)) {
    busy = true;  // a producer swapped in_ but has not linked yet
    return nullptr;
  }
  // tail is the last node: put the stub behind it so tail can be handed out.
  stub_.next.store(nullptr, std::memory_order_relaxed);
  link(&stub_);
  next = tail->next.load(std::memory_order_acquire);
  if (next) {
    out_ = next;
    return tail;
  }
  busy = true;
  return nullptr;
}

message* mailbox::drain_one(bool& busy) noexcept {
  message_link* l = pop_link(busy);
  if (!l) return nullptr;
  auto* m = static_cast<message*>(l);
  m->next.store(nullptr, std::memory_order_relaxed);
  if (save_tail) save_tail->next.store(m, std::memory_order_relaxed);
  else save_head = m;
  save_tail = m;
  return m;
}

void mailbox::unlink(message* prev, message* m) noexcept {
  auto* next = static_cast<message*>(m->next.load(std::memory_order_relaxed));
  if (prev) prev->next.store(next, std::memory_order_relaxed);
  else save_head = next;
  if (save_tail == m) save_tail = prev;
  if (mark_set && mark == m) mark = prev;
  dequeued.store(dequeued.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

void mailbox::clear() noexcept {
  for (message* m = save_head; m;) {
    auto* next = static_cast<message*>(m->next.load(std::memory_order_relaxed));
    destroy_message(m);
    dequeued.store(dequeued.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    m = next;
  }
  save_head = save_tail = nullptr;
  mark = nullptr;
  mark_set = false;
  bool busy = false;
  for (;;) {
    message_link* l = pop_link(busy);
    if (!l) {
      if (busy) continue;  // a producer is mid-push; it finishes in a few instructions
      break;
    }
    destroy_message(static_cast<message*>(l));
    dequeued.store(dequeued.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
}

}  // namespace herd::detail
