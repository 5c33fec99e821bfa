// A process's mailbox: a lock-free LIFO that senders push onto, and a private
// FIFO "save queue" that the owner moves everything into, oldest first, and
// scans. One allocation per message (the message itself), none per process.
//
// Who may touch what:
//   push()        — any thread (@threadsafe)
//   everything else — only the owning process (or, after it ended, the worker
//                     that frees it)
//   taken / dequeued — counters anyone may read (relaxed), written by the
//                     owner only; uncounted — added to by senders, rarely
//
// The length without a second read-modify-write per send (issue 19): the
// head word in_ holds, beside the newest message's address (its low 48 bits:
// a user-space address on x86-64 Linux, unless mmap is asked for more), a
// count of the pushes onto it since the owner last took them (its top 16
// bits, modulo 65,536). The push's CAS counts the message as it publishes it,
// so a send costs one locked instruction here, not two (a locked add was
// ~4 ns of a ~50 ns message on this machine). A push that wraps the count
// adds 65,536 to `uncounted`; the owner adds what it takes to `taken` and
// takes the wraps it took back out of `uncounted`. So
// length() = taken + count + uncounted - dequeued, exact once the pushes and
// takes in flight are done. A pushed message's `next` is the head word it
// replaced, count and all; the owner strips the count when it reverses the
// list (nothing else reads those links).
//
// Why a LIFO and not Vyukov's MPSC queue: the owner always takes everything at
// once (one exchange per batch, then a reversal), a push is one CAS with no
// half-linked state to wait out, and an empty mailbox is simply `in_ == null`.
//
// Orderings: push() is a seq_cst CAS — it is the publication the wake-up
// protocol orders against (see runtime/src/sched/fiber_state.hpp); its
// success also releases the message's contents. take_all() is a seq_cst
// exchange (acquire for the contents). incoming_empty() is a seq_cst load,
// the fiber's "look for work" before it parks. The counters are relaxed: a
// length is a snapshot for the observer and max_mailbox, not a
// synchronisation.
#pragma once
#include <herd/actors/message.hpp>

#include <atomic>
#include <cassert>
#include <cstdint>

namespace herd::detail {

class mailbox {
 public:
  // Senders' side first: a send touches the control block's first lines only.
  // Senders' end: the newest message (newest first), and the count (above).
  std::atomic<uintptr_t> in_{0};
  static constexpr unsigned count_shift = 48;
  static constexpr uintptr_t address_mask = (uintptr_t(1) << count_shift) - 1;
  static constexpr uintptr_t count_one = uintptr_t(1) << count_shift;
  static constexpr int64_t count_modulus = int64_t(1) << (64 - count_shift);
  static message* address_of(uintptr_t word) noexcept { return reinterpret_cast<message*>(word & address_mask); }
  // Pushes that wrapped the count, times 65,536, less the wraps the owner has
  // taken (below 0 for a moment if the owner takes before the sender adds).
  std::atomic<int64_t> uncounted{0};
  // spawn_options::max_mailbox, set before the process starts (0: none).
  // limit_hit: set by the sender whose push crossed the limit (it acts);
  // cleared by the owner once a log-only limit drained below half.
  uint32_t limit = 0;
  bool limit_kill = false, limit_log = false;
  std::atomic<bool> limit_hit{false};

  // Before the process starts: the limit (0: none) and what passing it does.
  // The one place that sets `limit`, so its owner-side copy `limited` (below)
  // cannot disagree with it.
  void set_limit(uint32_t n, bool kill, bool log) noexcept {
    limit = n;
    limit_kill = kill;
    limit_log = log;
    limited = n != 0;
  }

  // Any thread; approximate while pushes and takes are in flight (the owner
  // empties the head before it adds to `taken`, a push that wraps the count
  // adds to `uncounted` after its CAS): never negative, never a
  // wrapped-around huge length (which would trip a limit).
  uint64_t length() const noexcept {
    const auto out = static_cast<int64_t>(dequeued.load(std::memory_order_relaxed));
    const auto in = static_cast<int64_t>(taken.load(std::memory_order_relaxed) +
                                         (in_.load(std::memory_order_relaxed) >> count_shift)) +
                    uncounted.load(std::memory_order_relaxed);
    return in > out ? static_cast<uint64_t>(in - out) : 0;
  }
  // Owner, after taking messages out: re-arms a log-only limit.
  void rearm_limit() noexcept {
    if (limit && !limit_kill && limit_hit.load(std::memory_order_relaxed) && length() < limit / 2)
      limit_hit.store(false, std::memory_order_relaxed);
  }

  // Any thread.
  void push(message* m) noexcept {
    const auto address = reinterpret_cast<uintptr_t>(m);
    assert((address & ~address_mask) == 0 && "herd: a message above the 48-bit address space");
    uintptr_t old = in_.load(std::memory_order_relaxed);
    uintptr_t word;
    do {
      m->next.store(reinterpret_cast<message_link*>(old), std::memory_order_relaxed);  // count and all
      word = address | ((old & ~address_mask) + count_one);  // a carry out of bit 63 wraps the count
    } while (!in_.compare_exchange_weak(old, word, std::memory_order_seq_cst, std::memory_order_relaxed));
    if (__builtin_expect(word < count_one, 0)) uncounted.fetch_add(count_modulus, std::memory_order_relaxed);
  }

  // Owner. Takes every pushed message, oldest first, as a list linked through
  // next (nullptr if none). The caller files each one (append) or consumes it.
  message* take_all() noexcept { return take_batch().oldest; }

  // Owner. take_all for the drain: also the newest message, and whether every
  // one is a user message (kind 0), read while the reversal has each line in
  // hand — such a batch joins the save queue in one step (append_batch), not
  // in a second walk over lines a long backlog has already pushed out of cache.
  struct batch {
    message* oldest = nullptr;
    message* newest = nullptr;
    bool all_user = true;
  };
  batch take_batch() noexcept {
    if (!in_.load(std::memory_order_relaxed)) return {};
    const uintptr_t word = in_.exchange(0, std::memory_order_seq_cst);
    message* newest = address_of(word);
    if (newest->next.load(std::memory_order_relaxed)) return take_many(newest, word);
    taken.store(taken.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return {newest, newest, newest->kind == 0};  // one: a request/reply's whole batch
  }

  // Owner: files a batch of take_batch's (oldest..newest, linked) at the save
  // queue's tail.
  void append_batch(message* oldest, message* newest) noexcept {
    if (save_tail) save_tail->next.store(oldest, std::memory_order_relaxed);
    else save_head = oldest;
    save_tail = newest;
  }

  // Owner: files m at the save queue's tail.
  void append(message* m) noexcept {
    m->next.store(nullptr, std::memory_order_relaxed);
    if (save_tail) save_tail->next.store(m, std::memory_order_relaxed);
    else save_head = m;
    save_tail = m;
  }

  // Owner.
  bool incoming_empty() const noexcept { return in_.load(std::memory_order_seq_cst) == 0; }

  // The receive mark: the last message in the save queue when the mark was
  // made (nullptr: before the first). Valid while mark_set. Owner; written
  // once per call, so it may share the senders' line (process.hpp).
  message* mark = nullptr;
  // Owner: the save queue, what it has taken from in_ and what it has taken
  // out. These are written per message or batch, so they sit on a line of
  // their own, not the senders' (in_): a receiver draining a backlog while
  // another core pushes would otherwise take that line back from the senders
  // at every message.
  message* save_head = nullptr;
  message* save_tail = nullptr;
  std::atomic<uint64_t> taken{0};
  std::atomic<uint64_t> dequeued{0};
  bool mark_set = false;
  // limit != 0 (set_limit keeps it so): unlink's per-message test reads this
  // copy, not `limit` on the senders' line.
  bool limited = false;

  // Owner: unlinks m (whose predecessor in the save queue is prev, or nullptr).
  void unlink(message* prev, message* m) noexcept {
    auto* next = static_cast<message*>(m->next.load(std::memory_order_relaxed));
    if (prev) prev->next.store(next, std::memory_order_relaxed);
    else save_head = next;
    if (save_tail == m) save_tail = prev;
    if (mark_set && mark == m) mark = prev;
    dequeued.store(dequeued.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (limited) rearm_limit();
  }

  // Owner (or after the last grace period): frees every message in the save
  // queue; what is still pushed is the caller's (take_all) — see signals.hpp.
  void clear_saved() noexcept;

 private:
  // take_batch of more than one: reverses the list (stripping the counts
  // from its links) and does the accounting.
  batch take_many(message* newest, uintptr_t word) noexcept;
};

inline message* next_of(const message* m) noexcept {
  return static_cast<message*>(m->next.load(std::memory_order_relaxed));
}

}  // namespace herd::detail
