// The scan loop of selective receive (receive.hpp has the matching side).
// Messages are looked at in arrival order: first the save queue (messages a
// previous receive skipped), then whatever senders pushed since, each moved
// into the save queue's tail as it is looked at — so every message is moved
// once, and a receive that waits again looks only at new arrivals.
#include <herd/actors/receive.hpp>
#include <herd/runtime/clock.hpp>
#include <herd/runtime/sched.hpp>

#include "process.hpp"

#include <stdexcept>

namespace herd::detail {
namespace {

inline message* next_of(message* m) noexcept {
  return static_cast<message*>(m->next.load(std::memory_order_relaxed));
}

process* require_self(const char* what) {
  process* p = self_process();
  if (!p) throw std::logic_error(std::string("herd: ") + what + " called outside a process");
  return p;
}

}  // namespace

uint64_t receive_deadline(std::chrono::milliseconds timeout) noexcept {
  if (timeout == infinity) return rt::no_deadline;
  return rt::deadline_after(timeout);
}

receive_mark make_mark() {
  process* p = require_self("mark_mailbox");
  mailbox& mb = p->mbox;
  bool busy = false;
  for (;;) {
    while (mb.drain_one(busy)) {
    }
    if (!busy) break;
  }
  mb.mark = mb.save_tail;
  mb.mark_set = true;
  return {};
}

message* receive_scan(matcher mt, uint64_t deadline, bool from_mark) {
  process* p = require_self("receive");
  rt::consume_reduction();
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
      return cur;
    }
  }
  prev = mb.save_tail;

  bool expired = false;
  unsigned spins = 0;
  for (;;) {
    bool busy = false;
    while (message* m = mb.drain_one(busy)) {
      if (mt.test(mt.ctx, m)) {
        mb.unlink(prev, m);
        return m;
      }
      prev = m;
    }
    if (busy) {
      // A sender is between its two stores; it finishes in a few instructions
      // unless the OS preempted it, so spin briefly, then let others run.
      if (++spins < 64) {
        __builtin_ia32_pause();
      } else {
        spins = 0;
        rt::yield();
      }
      continue;
    }
    if (expired || no_block) return nullptr;
    if (deadline != rt::no_deadline && rt::now_ms() >= deadline) return nullptr;
    expired = rt::park_until(deadline);
    no_block = exit_pending_at_blocking_point(p);
  }
}

}  // namespace herd::detail
