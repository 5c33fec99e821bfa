// The scan loop of selective receive (receive.hpp has the matching side).
// Messages are looked at in arrival order: first the save queue (messages a
// previous receive skipped), then whatever senders pushed since, moved into
// the save queue's tail in one batch — so every message is moved once, and a
// receive that waits again looks only at new arrivals.
#include <herd/actors/receive.hpp>
#include <herd/runtime/clock.hpp>
#include <herd/runtime/sched.hpp>

#include "process.hpp"
#include "signals.hpp"

namespace herd::detail {

// 0 stands for "already passed" (after(0) and negative timeouts): receive_scan
// then returns without reading the clock.
uint64_t receive_deadline(std::chrono::milliseconds timeout) noexcept {
  if (timeout == infinity) return rt::no_deadline;
  if (timeout.count() <= 0) return 0;
  return rt::deadline_after(timeout);
}

void mark_mailbox_of(process* p) {
  mailbox& mb = p->mbox;
  drain_mailbox(p);
  mb.mark = mb.save_tail;
  mb.mark_set = true;
}

receive_mark make_mark() {
  mark_mailbox_of(require_process("herd::mark_mailbox"));
  return {};
}

message* receive_scan(matcher mt, uint64_t deadline, bool from_mark) {
  process* p = self_process();
  if (__builtin_expect(!p, 0)) p = require_process(from_mark ? "herd::receive_after" : "herd::receive");  // throws
  // Out of budget with mail waiting: it runs next, as it would had it parked
  // and been woken by that mail. Sent to the ring's tail, a fan-in sink got
  // one slice per round of its worker's ring while its senders filled its
  // mailbox (docs/handoff.md, session 21).
  if (__builtin_expect(--p->reductions_left == 0, 0)) {
    if (p->mbox.save_head || !p->mbox.incoming_empty()) rt::yield_for_budget_fed(p);
    else rt::yield_for_budget(p);
  }
  bool no_block = exit_pending_at_blocking_point(p);
  mailbox& mb = p->mbox;

  message* prev = nullptr;
  message* cur = mb.save_head;
  if (from_mark && mb.mark_set) {
    prev = mb.mark;
    cur = prev ? next_of(prev) : mb.save_head;
  }
  for (; cur; prev = cur, cur = next_of(cur)) {
    if (mt.test(mt.ctx, cur)) {
      mb.unlink(prev, cur);
      note_unfiled(p, cur);
      return cur;
    }
  }
  bool expired = false;
  for (;;) {
    // prev is the save queue's tail: what the drain files follows it.
    prev = mb.save_tail;
    message* fresh = drain_mailbox(p);
    if (!no_block) no_block = exit_pending_at_blocking_point(p);  // a fatal exit signal came in
    for (message* m = fresh; m; prev = m, m = next_of(m)) {
      if (mt.test(mt.ctx, m)) {
        mb.unlink(prev, m);
        note_unfiled(p, m);
        return m;
      }
    }
    if (expired || no_block) return nullptr;
    // The worker's coarse clock (no clock read) lags the real one: a deadline
    // that passed unnoticed here is armed anyway and fires at once.
    if (deadline != rt::no_deadline && (deadline == 0 || rt::coarse_now_ms() >= deadline)) return nullptr;
    // The drain at the top of the loop looks at pending_exit after it.
    expired = rt::park_until(p, deadline);
  }
}

}  // namespace herd::detail
