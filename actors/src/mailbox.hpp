// A process's mailbox: an intrusive multi-producer/single-consumer queue
// (Vyukov's, with an embedded stub node) that senders push to, and a private
// "save queue" the owner drains it into and scans. One allocation per message
// (the message itself), none per process.
//
// Who may touch what:
//   push()                    — any thread (@threadsafe)
//   everything else           — only the owning process
//   enqueued/dequeued         — written as stated, read by anyone (relaxed)
//
// Orderings: push() swaps `in_` with seq_cst (it is the publication the wake-up
// protocol orders against; see fiber_state.hpp) and links prev->next with
// release; the owner reads next with acquire. Between a producer's swap and its
// link the queue is "busy": the owner sees in_ != its tail but no next yet, and
// must not park — empty() tells the two apart.
#pragma once
#include <herd/actors/message.hpp>

#include <atomic>
#include <cstdint>

namespace herd::detail {

class mailbox {
 public:
  mailbox() noexcept : in_(&stub_), out_(&stub_) {}

  // Any thread.
  void push(message* m) noexcept {
    m->next.store(nullptr, std::memory_order_relaxed);
    link(m);
    enqueued.fetch_add(1, std::memory_order_relaxed);
  }

  // Owner. Pops the oldest pushed message into the save queue's tail and
  // returns it; nullptr when nothing is there (`busy` says a push is midway).
  message* drain_one(bool& busy) noexcept;

  // Owner: true only when no message is queued or being pushed (seq_cst read
  // of in_, see the top).
  bool incoming_empty() const noexcept {
    return out_ == &stub_ && stub_.next.load(std::memory_order_acquire) == nullptr &&
           in_.load(std::memory_order_seq_cst) == &stub_;
  }

  // Owner: the save queue.
  message* save_head = nullptr;
  message* save_tail = nullptr;
  // The receive mark: the last message that was in the save queue when the
  // mark was made (nullptr: before the first). Valid while mark_set.
  message* mark = nullptr;
  bool mark_set = false;

  // Owner: unlinks m (whose predecessor in the save queue is prev, or nullptr).
  void unlink(message* prev, message* m) noexcept;

  // Owner (or after the last grace period): frees every message.
  void clear() noexcept;

  std::atomic<uint64_t> enqueued{0};  // relaxed: statistics and mailbox length
  std::atomic<uint64_t> dequeued{0};  // written by the owner only

 private:
  void link(message_link* n) noexcept {
    message_link* prev = in_.exchange(n, std::memory_order_seq_cst);
    // release: pairs with the owner's acquire load of next.
    prev->next.store(n, std::memory_order_release);
  }
  message_link* pop_link(bool& busy) noexcept;

  std::atomic<message_link*> in_;  // producers' end
  message_link* out_;              // owner's end
  message_link stub_;
};

}  // namespace herd::detail
