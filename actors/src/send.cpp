#include <herd/actors/detail/deferred.hpp>
#include <herd/actors/detail/remote.hpp>
#include <herd/actors/logger.hpp>
#include <herd/actors/send.hpp>
#include <herd/runtime/sched.hpp>

#include <optional>

#include "node_state.hpp"
#include "process.hpp"
#include "names.hpp"
#include "signals.hpp"
#include "trace.hpp"

namespace herd::detail {

std::optional<pid> lookup_name(std::string_view name);

namespace {

// A push took p's mailbox past spawn_options::max_mailbox. The sender whose
// push crossed first acts (limit_hit); the kill is an untrappable exit
// signal, so it queues behind what is already there, as any signal does.
[[gnu::noinline]] void over_limit(process* p) noexcept {
  mailbox& mb = p->mbox;
  if (mb.length() <= mb.limit || mb.limit_hit.exchange(true, std::memory_order_relaxed)) return;
  try {
    if (mb.limit_log) {
      const interned_name* n = p->name.load(std::memory_order_acquire);
      log_report("process " + p->id.to_string() + (n ? " (" + n->text + ")" : std::string()) +
                 ": mailbox above " + std::to_string(mb.limit) + " messages" +
                 (mb.limit_kill ? "; killed (max_mailbox)" : " (max_mailbox)"));
    }
    if (mb.limit_kill) send_signal(p->id, kind_exit, sig_exit{no_pid, exit_reason::kill(), false});
  } catch (...) {
    mb.limit_hit.store(false, std::memory_order_relaxed);  // out of memory: the next push tries again
  }
}

}  // namespace

bool deliver(pid to, message* m) noexcept {
  // One predictable branch for the local hot path; no_pid (all ones) goes
  // this way too and is dropped there.
  if (__builtin_expect(to.index >= remote_pid_bit, 0)) return deliver_remote(to, m);
  node_state* n = current_node();
  rt::fiber* me = rt::current();
  bool delivered = false;
  if (me) {
    // On a worker: the pointer stays valid until this worker's next quiescent
    // point (see sched/qsbr.hpp); nothing here suspends before we are done.
    if (process* p = n->table.lookup(to)) {
      trace_delivery(p, m, process::from(me)->id);
      p->mbox.push(m);
      if (p->mbox.limit) over_limit(p);
      rt::wake_from(me, p);
      delivered = true;
    }
  } else if (n) {
    rt::foreign_read_guard g;  // foreign threads count as readers meanwhile
    if (process* p = n->table.lookup(to)) {
      trace_delivery(p, m, no_pid);
      p->mbox.push(m);
      if (p->mbox.limit) over_limit(p);
      rt::wake(p);
      delivered = true;
    }
  }
  if (!delivered) destroy_message(m);
  if (me) rt::consume_reduction(me);
  return delivered;
}

bool deliver(std::string_view name, message* m) noexcept {
  std::optional<pid> to = lookup_name(name);
  if (!to) {
    destroy_message(m);
    return false;
  }
  return deliver(*to, m);
}

void prefetch_post(pid to, int stage) noexcept {
  node_state* n = current_node();
  if (n) n->table.prefetch(to, stage);
}

bool post_deferred(pid to, message* note) noexcept {
  node_state* n = current_node();
  note->kind = kind_deferred;
  bool delivered = false;
  if (n) {
    // On a worker (in a fiber, or dispatching I/O readiness — a poll counts
    // for reclamation until its dispatch ends, see runtime qsbr.hpp) the
    // looked-up control block stays valid until we are done; the guard only
    // acts on foreign threads.
    rt::foreign_read_guard g;
    if (process* p = n->table.lookup(to)) {
      p->mbox.push(note);
      if (rt::fiber* me = rt::current()) rt::wake_from(me, p);
      else rt::wake(p);
      delivered = true;
    }
  }
  if (!delivered) static_cast<const deferred_ops*>(note->ops)->discard(note, to);
  return delivered;
}

}  // namespace herd::detail
