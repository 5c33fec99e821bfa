// Acting on signals (see signals.hpp). The exit-signal rules are Erlang's:
//   exit/2 with `kill`              -> ends the receiver with `killed` (untrappable)
//   receiver traps exits            -> becomes exit_msg{from, reason}
//   `normal`                        -> ignored, unless it is exit(self(), normal)
//   anything else                   -> ends the receiver with that reason
// An exit signal that comes through a link the receiver no longer has (it
// unlinked meanwhile) is dropped.
#include "signals.hpp"

#include <herd/actors/call.hpp>
#include <herd/actors/detail/deferred.hpp>
#include <herd/actors/send.hpp>
#include <herd/runtime/sched.hpp>

#include "node_state.hpp"
#include "trace.hpp"

#include <algorithm>

namespace herd::detail {
namespace {

void set_fatal(process* p, const exit_reason& r) {
  if (p->pending_exit.load(std::memory_order_relaxed)) return;  // the first one wins
  p->pending_exit.store(new exit_reason(r), std::memory_order_release);
}

// Returns the message to file in the save queue (m itself, a new one), or
// nullptr when the signal was consumed.
message* act_on(process* p, message* m) {
  switch (m->kind) {
    case kind_link: {
      pid from = m->as<sig_link>().from;
      destroy_message(m);
      relations_of(p).add_link(from);
      return nullptr;
    }
    case kind_unlink: {
      pid from = m->as<sig_unlink>().from;
      destroy_message(m);
      if (p->rel) p->rel->drop_link(from);
      return nullptr;
    }
    case kind_exit: {
      auto& s = m->as<sig_exit>();
      pid from = s.from;
      exit_reason reason = std::move(s.reason);
      bool via_link = s.via_link;
      destroy_message(m);
      if (via_link && !(p->rel && p->rel->drop_link(from)))
        return nullptr;  // unlinked meanwhile
      if (!via_link && reason.kind() == exit_kind::kill) {
        set_fatal(p, exit_reason::killed());
        return nullptr;
      }
      if (p->trap_exit.load(std::memory_order_relaxed)) return make_message<exit_msg>(exit_msg{from, std::move(reason)});
      if (reason.is_normal()) {
        if (!via_link && from == p->id) set_fatal(p, reason);
        return nullptr;
      }
      set_fatal(p, reason);
      return nullptr;
    }
    case kind_monitor: {
      auto& s = m->as<sig_monitor>();
      relations_of(p).add(ref_role::watcher, s.ref, s.from);
      destroy_message(m);
      return nullptr;
    }
    case kind_demonitor: {
      uint64_t ref = m->as<sig_demonitor>().ref;
      destroy_message(m);
      if (p->rel) p->rel->drop(ref_role::watcher, ref);
      return nullptr;
    }
    case kind_down: {
      uint64_t ref = m->as<down>().ref.id;
      if (p->rel && p->rel->drop(ref_role::monitoring, ref)) {
        m->kind = kind_user;
        m->reserved = tagged_by_ref;  // demonitor / a finished call may still drop it
        ++p->rel->tagged_filed;
        return m;
      }
      destroy_message(m);  // demonitored: Erlang's {flush}
      return nullptr;
    }
    case kind_alias: {
      uint64_t ref = *static_cast<const uint64_t*>(m->payload());
      if (p->rel && p->rel->has(ref_role::alias, ref)) {
        m->kind = kind_user;
        m->reserved = tagged_by_ref;
        ++p->rel->tagged_filed;
        return m;
      }
      destroy_message(m);  // the call gave up: a late reply is dropped
      return nullptr;
    }
    case kind_info: {
      if (const auto& a = m->as<sig_info>().answer) answer_info(p, *a);
      destroy_message(m);
      return nullptr;
    }
    case kind_call: {
      const auto& f = *static_cast<const from*>(m->payload());
      relations_of(p).add(ref_role::watcher, f.ref, f.caller);
      m->kind = kind_user;
      return m;
    }
    default:
      return m;
  }
}

// Answers a request found in the mailbox of a process that has ended, and
// frees it (anything else is just freed; a deferred note goes back to its
// source).
void answer_as_dead(process* p, message* m, const exit_reason& reason) {
  if (m->kind == kind_deferred) {
    static_cast<const deferred_ops*>(m->ops)->discard(m, p->id);
    return;
  }
  if (m->kind == kind_link) {
    send_signal(m->as<sig_link>().from, kind_exit, sig_exit{p->id, reason, true});
  } else if (m->kind == kind_monitor) {
    auto& s = m->as<sig_monitor>();
    send_signal(s.from, kind_down, down{monitor_ref{s.ref}, p->id, reason});
  } else if (m->kind == kind_call) {
    const auto& f = *static_cast<const from*>(m->payload());
    send_signal(f.caller, kind_down, down{monitor_ref{f.ref}, p->id, reason});
  }
  destroy_message(m);
}

}  // namespace

std::size_t drop_tagged(process* p, message* after, bool from_start, uint64_t ref) {
  mailbox& mb = p->mbox;
  if (!p->rel || !p->rel->tagged_filed) return 0;  // nothing tagged is filed: no scan
  message* prev = from_start ? nullptr : after;
  message* m = from_start ? mb.save_head : (after ? next_of(after) : mb.save_head);
  std::size_t dropped = 0;
  while (m) {
    message* next = next_of(m);
    if (m->reserved == tagged_by_ref && *static_cast<const uint64_t*>(m->payload()) == ref) {
      mb.unlink(prev, m);
      --p->rel->tagged_filed;
      destroy_message(m);
      ++dropped;
    } else {
      prev = m;
    }
    m = next;
  }
  return dropped;
}

relations& relations_of(process* p) {
  if (!p->rel) {
    p->rel = new relations;
    p->rel->published = &p->relations_bytes;
    p->rel->publish();
  }
  return *p->rel;
}

bool send_signal(pid to, uint32_t kind, message* m) noexcept {
  m->kind = kind;
  return deliver(to, m);
}

message* drain_mixed_batch(process* p, message* oldest) {
  mailbox& mb = p->mbox;
  message* m = oldest;
  message* first = nullptr;
  int64_t consumed = 0;  // signals acted on, late replies dropped: no longer waiting
  while (m) {
    message* next = next_of(m);
    if (m->kind == kind_deferred) {
      // The note goes back to its source inside materialize (which may post
      // it again at once: `next` was read before). It counted as one
      // enqueued message; what it turns into counts in its place.
      message* made = static_cast<const deferred_ops*>(m->ops)->materialize(m, p->id);
      ++consumed;
      while (made) {
        message* after = next_of(made);
        trace_delivery(p, made, no_pid);  // made here: a source's data (tcp_data, ...)
        mb.append(made);
        if (!first) first = made;
        --consumed;
        made = after;
      }
      m = next;
      continue;
    }
    if (message* keep = m->kind == kind_user ? m : act_on(p, m)) {
      mb.append(keep);
      if (!first) first = keep;
    } else {
      ++consumed;
    }
    m = next;
  }
  if (consumed)
    mb.dequeued.store(mb.dequeued.load(std::memory_order_relaxed) + static_cast<uint64_t>(consumed),
                      std::memory_order_relaxed);
  return first;
}

void announce_death(process* p, const exit_reason& reason) {
  for (message* m = p->mbox.take_all(); m;) {
    message* next = next_of(m);
    answer_as_dead(p, m, reason);  // requests that came before the end get the real reason
    m = next;
  }
  p->mbox.clear_saved();
  if (relations* r = p->rel) {
    r->links.for_each([&](const link_entry& l) {
      pid to{uint32_t(l.key), uint32_t(l.key >> 32)};
      send_signal(to, kind_exit, sig_exit{p->id, reason, true});
    });
    r->refs.for_each([&](const ref_entry& e) {
      uint64_t ref = relations::ref_of(e);
      switch (relations::role_of(e)) {
        case ref_role::watcher: send_signal(e.other, kind_down, down{monitor_ref{ref}, p->id, reason}); break;
        // A dead watcher's monitors must not stay on their targets forever.
        case ref_role::monitoring: send_signal(e.other, kind_demonitor, sig_demonitor{p->id, ref}); break;
        case ref_role::alias: break;
      }
    });
    r->clear();
  }
}

void clear_late_signals(process* p) {
  for (message* m = p->mbox.take_all(); m;) {
    message* next = next_of(m);
    answer_as_dead(p, m, exit_reason::noproc());
    m = next;
  }
  p->mbox.clear_saved();
  delete p->rel;
  p->rel = nullptr;
  p->relations_bytes.store(0, std::memory_order_relaxed);
}

}  // namespace herd::detail
