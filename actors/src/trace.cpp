// Tracing one process's deliveries (see trace.hpp for the lifetime rules and
// introspect.hpp for the contract). recon_trace's rate limit: more than
// trace_rate_limit events inside one one-second window end the trace.
#include "trace.hpp"

#include <herd/runtime/thread_safety.hpp>
#include <herd/runtime/clock.hpp>
#include <herd/runtime/sched.hpp>

#include "node_state.hpp"
#include "signals.hpp"

#include <unistd.h>

#include <cstring>

namespace herd::detail {
namespace {

const char* signal_name(uint32_t kind) noexcept {
  switch (kind) {
    case kind_link: return "link";
    case kind_unlink: return "unlink";
    case kind_exit: return "exit";
    case kind_monitor: return "monitor";
    case kind_demonitor: return "demonitor";
    case kind_down: return "down";
    case kind_alias: return "reply";
    default: return nullptr;  // a message (kind_user, kind_call, materialized notes)
  }
}

void free_core(void* c) { delete static_cast<trace_core*>(c); }

}  // namespace

void trace_core::notify() noexcept {
  if (notify_fd < 0) return;
  uint64_t one = 1;
  // An eventfd never blocks a writer short of 2^64-1 pending: nothing to handle.
  [[maybe_unused]] ssize_t r = ::write(notify_fd, &one, sizeof one);
}

void trace_core::finish_locked(introspect::trace_end why) {
  if (end.load(std::memory_order_relaxed) != introspect::trace_end::none) return;
  end.store(why, std::memory_order_relaxed);
  notify();
}

void trace_core::record_locked(introspect::trace_event&& e, uint64_t now_ms) {
  if (end.load(std::memory_order_relaxed) != introspect::trace_end::none) return;
  if (now_ms - window_start_ms >= 1000) {
    window_start_ms = now_ms;
    window_count = 0;
  }
  if (++window_count > introspect::trace_rate_limit) {
    finish_locked(introspect::trace_end::rate);
    return;
  }
  bool was_empty = events.empty();
  events.push_back(std::move(e));
  ++recorded;
  if (recorded >= limit) finish_locked(introspect::trace_end::limit);
  else if (was_empty) notify();  // the observer takes them all at once
}

void trace_message(trace_core* t, const message* m, pid from) noexcept {
  if (m->kind == kind_info) return;  // the observer's own questions
  if (t->end.load(std::memory_order_relaxed) != introspect::trace_end::none) return;
  try {
    introspect::trace_event e;
    e.at_ms = rt::now_ms();
    e.bytes = message::payload_offset + m->ops->size;
    e.from = from;
    if (const char* sig = signal_name(m->kind)) {
      e.signal = true;
      e.type = sig;
      switch (m->kind) {
        case kind_link: e.from = static_cast<const sig_link*>(m->payload())->from; break;
        case kind_unlink: e.from = static_cast<const sig_unlink*>(m->payload())->from; break;
        case kind_monitor: e.from = static_cast<const sig_monitor*>(m->payload())->from; break;
        case kind_demonitor: e.from = static_cast<const sig_demonitor*>(m->payload())->from; break;
        case kind_exit: {
          const auto* s = static_cast<const sig_exit*>(m->payload());
          e.from = s->from;
          e.reason = s->reason.to_string();
          break;
        }
        default: break;
      }
    } else {
      e.type.assign(m->ops->name, m->ops->name_len);
    }
    herd::rt::lock_guard<herd::rt::mutex> g(t->m);
    t->record_locked(std::move(e), e.at_ms);
  } catch (...) {
    // Out of memory while tracing: the event is lost, the delivery is not.
  }
}

void trace_exit(process* p, const exit_reason& why) noexcept {
  trace_core* t = p->tracer.exchange(nullptr, std::memory_order_acq_rel);
  if (!t) return;
  try {
    herd::rt::lock_guard<herd::rt::mutex> g(t->m);
    if (t->end.load(std::memory_order_relaxed) == introspect::trace_end::none) t->exit_reason = why.to_string();
    t->finish_locked(introspect::trace_end::exited);
  } catch (...) {
  }
}

}  // namespace herd::detail

namespace herd::introspect {

using detail::trace_core;

const char* to_string(trace_end e) noexcept {
  switch (e) {
    case trace_end::none: return "none";
    case trace_end::limit: return "limit";
    case trace_end::exited: return "exited";
    case trace_end::timeout: return "timeout";
    case trace_end::rate: return "rate";
    case trace_end::closed: return "closed";
  }
  return "?";
}

std::unique_ptr<tracer> tracer::start(pid p, uint32_t limit, int notify_fd, std::string* error) {
  detail::node_state* n = detail::current_node();
  if (!n) {
    if (error) *error = "no node is running";
    return nullptr;
  }
  auto* core = new trace_core(rt::now_ms());
  core->target = p;
  core->limit = limit ? limit : 1;
  core->notify_fd = notify_fd;
  bool attached = false, found = false;
  {
    rt::foreign_read_guard g;
    if (detail::process* proc = n->table.lookup(p)) {
      found = true;
      trace_core* expected = nullptr;
      // release: the core's fields, for the senders' acquire load.
      attached = proc->tracer.compare_exchange_strong(expected, core, std::memory_order_release,
                                                      std::memory_order_relaxed);
    }
  }
  if (!attached) {
    delete core;  // never published
    if (error) *error = found ? "the process is already being traced" : "no such live process";
    return nullptr;
  }
  return std::unique_ptr<tracer>(new tracer(core, p));
}

tracer::~tracer() {
  stop(trace_end::closed);
  detail::node_state* n = detail::current_node();
  if (!n) {  // the node is gone: so are its senders
    delete core_;
    return;
  }
  {
    rt::foreign_read_guard g;
    if (detail::process* proc = n->table.lookup(target_)) {
      trace_core* expected = core_;
      proc->tracer.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel, std::memory_order_relaxed);
    }
  }
  // A process that ended without being looked up here exchanged the pointer
  // out itself (trace_exit) before it was unpublished... or is between its
  // unpublish and that exchange: the grace period covers both.
  rt::retire(core_, &detail::free_core);
}

std::vector<trace_event> tracer::take() {
  herd::rt::lock_guard<herd::rt::mutex> g(core_->m);
  return std::exchange(core_->events, {});
}

trace_end tracer::ended() const noexcept { return core_->end.load(std::memory_order_relaxed); }

std::string tracer::exit_reason() const {
  herd::rt::lock_guard<herd::rt::mutex> g(core_->m);
  return core_->exit_reason;
}

void tracer::stop(trace_end why) noexcept {
  herd::rt::lock_guard<herd::rt::mutex> g(core_->m);
  core_->finish_locked(why);
}

uint64_t tracer::recorded() const noexcept {
  herd::rt::lock_guard<herd::rt::mutex> g(core_->m);
  return core_->recorded;
}

}  // namespace herd::introspect
