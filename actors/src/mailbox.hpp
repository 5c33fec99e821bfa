// A process's mailbox: a lock-free LIFO that senders push onto, and a private
// FIFO "save queue" that the owner moves everything into, oldest first, and
// scans. One allocation per message (the message itself), none per process.
//
// Who may touch what:
//   push()        — any thread (@threadsafe)
//   everything else — only the owning process (or, after it ended, the worker
//                     that frees it)
//   enqueued / dequeued — counters anyone may read (relaxed); dequeued is
//                     written by the owner only
//
// Why a LIFO and not Vyukov's MPSC queue: the owner always takes everything at
// once (one exchange per batch, then a reversal), a push is one CAS with no
// half-linked state to wait out, and an empty mailbox is simply `in_ == null`.
//
// Orderings: push() is a seq_cst CAS — it is the publication the wake-up
// protocol orders against (see runtime/src/sched/fiber_state.hpp); its
// success also releases the message's contents. take_all() is a seq_cst
// exchange (acquire for the contents). incoming_empty() is a seq_cst load,
// the fiber's "look for work" before it parks.
#pragma once
#include <herd/actors/message.hpp>

#include <atomic>
#include <cstdint>

namespace herd::detail {

class mailbox {
 public:
  // Senders' side first: a send touches the control block's first lines only.
  std::atomic<message*> in_{nullptr};  // senders' end: newest first
  std::atomic<uint64_t> enqueued{0};
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

  // Any thread; approximate. A sender counts its push after the CAS that
  // published it, so the owner may already have counted it taken: 0 then,
  // never a wrapped-around huge length (which would trip a limit).
  uint64_t length() const noexcept {
    const uint64_t out = dequeued.load(std::memory_order_relaxed);
    const uint64_t in = enqueued.load(std::memory_order_relaxed);
    return in > out ? in - out : 0;
  }
  // Owner, after taking messages out: re-arms a log-only limit.
  void rearm_limit() noexcept {
    if (limit && !limit_kill && limit_hit.load(std::memory_order_relaxed) && length() < limit / 2)
      limit_hit.store(false, std::memory_order_relaxed);
  }

  // Any thread.
  void push(message* m) noexcept {
    message* old = in_.load(std::memory_order_relaxed);
    do {
      m->next.store(old, std::memory_order_relaxed);
    } while (!in_.compare_exchange_weak(old, m, std::memory_order_seq_cst, std::memory_order_relaxed));
    enqueued.fetch_add(1, std::memory_order_relaxed);
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
    message* newest = in_.exchange(nullptr, std::memory_order_seq_cst);
    if (!newest->next.load(std::memory_order_relaxed)) return {newest, newest, newest->kind == 0};  // one: request/reply
    return reverse(newest);
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
  bool incoming_empty() const noexcept { return in_.load(std::memory_order_seq_cst) == nullptr; }

  // The receive mark: the last message in the save queue when the mark was
  // made (nullptr: before the first). Valid while mark_set. Owner; written
  // once per call, so it may share the senders' line (process.hpp).
  message* mark = nullptr;
  // Owner: the save queue, and what it has taken out. These are written per
  // message, so they sit on a line of their own, not the senders' (in_,
  // enqueued): a receiver draining a backlog while another core pushes would
  // otherwise take that line back from the senders at every message.
  message* save_head = nullptr;
  message* save_tail = nullptr;
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
  static batch reverse(message* newest) noexcept;
};

inline message* next_of(const message* m) noexcept {
  return static_cast<message*>(m->next.load(std::memory_order_relaxed));
}

}  // namespace herd::detail
