// A process's life: launch (pid, stack, publish, start), its fiber body (the
// spawn function and then any hibernate continuations), and its end.
//
// How a process dies (docs/design.md, "Traps of stackful code"):
//  * An exit signal sets pending_exit (first one wins) and wakes the process.
//  * At its next blocking point — receive, sleep, yield, hibernate, the return
//    of blocking() — the process throws exit_unwind, so every destructor on its
//    stack runs. Never at send, never while another exception is in flight.
//  * If user code swallows exit_unwind, the next blocking point throws it
//    again; a blocking call reached during unwinding neither blocks nor throws.
//  * The reason stays the signal's whatever the function returns; `kill` is
//    reported as `killed`.
//  * A stack is recycled only after the fiber function has returned (the
//    runtime does it after the final switch), never by dropping a suspended
//    fiber.
#include "process.hpp"
#include "exit_watch_impl.hpp"

#include <herd/actors/hibernate.hpp>
#include <herd/actors/logger.hpp>
#include <herd/actors/process.hpp>
#include <herd/actors/spawn.hpp>
#include <herd/runtime/alloc.hpp>
#include <herd/runtime/clock.hpp>
#include <herd/runtime/sched.hpp>

#include "node_state.hpp"
#include "names.hpp"
#include "signals.hpp"
#include "trace.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <typeinfo>

namespace herd::detail {
namespace {

struct hibernate_unwind {
  body* next;
};


void destroy_body(body* b) noexcept {
  if (!b) return;
  if (b->inline_storage) b->~body();
  else free_body(b);
}

exit_reason final_from_pending(const exit_reason& r) {
  return r.kind() == exit_kind::kill ? exit_reason::killed() : r;
}

rt::fiber_result process_run(rt::fiber* f) noexcept;
void process_finished(rt::fiber* f) noexcept;
std::size_t process_describe(const rt::fiber* f, char* buf, std::size_t cap) noexcept;

constexpr rt::fiber_ops process_ops{&process_run, &process_finished, &process_describe};

// Runs the current body, then continuations, on this fiber's stack.
rt::fiber_result process_run(rt::fiber* f) noexcept {
  process* p = process::from(f);
  for (;;) {
    if (!p->current_body->inline_storage && !p->current_body->first) {
      // Woken from hibernation: signals alone (a link, a monitor) do not wake
      // the continuation, as in BEAM; a message or a fatal exit does.
      drain_mailbox(p);
      if (!p->mbox.save_head && !p->pending_exit.load(std::memory_order_acquire))
        return rt::fiber_result::hibernate;
    }
    body* b = p->current_body;
    p->current_body = nullptr;
    body* next = nullptr;
    // On the heap, not in this frame: this frame sits under every process's
    // frames, and a compact process copies them all out at each wait.
    exit_reason* crash = nullptr;
    if (exit_reason* pend = p->pending_exit.load(std::memory_order_acquire)) {
      // Killed before it started, or while hibernated: nothing to unwind.
      destroy_body(b);
      p->final_reason = new exit_reason(final_from_pending(*pend));
      return rt::fiber_result::dead;
    }
    p->running_body = b;
    try {
      next = b->invoke();
    } catch (const exit_unwind&) {
    } catch (const hibernate_unwind& h) {
      next = h.next;
    } catch (...) {
      crash = new exit_reason(reason_of_current_exception());
      p->crashed = true;
    }
    p->running_body = nullptr;
    destroy_body(b);
    if (exit_reason* pend = p->pending_exit.load(std::memory_order_acquire)) {
      if (next) free_body(next);
      delete crash;
      p->final_reason = new exit_reason(final_from_pending(*pend));
      return rt::fiber_result::dead;
    }
    if (!next) {
      if (crash && !crash->is_normal()) p->final_reason = crash;
      else delete crash;
      return rt::fiber_result::dead;
    }
    p->current_body = next;
    // BEAM: with a message already waiting, hibernate wakes at once.
    if (p->mbox.save_head || !p->mbox.incoming_empty()) continue;
    return rt::fiber_result::hibernate;
  }
}

void free_process(void* o) {
  auto* p = static_cast<process*>(o);
  clear_late_signals(p);  // what senders pushed after the process ended
  delete p->final_reason;
  delete p->pending_exit.load(std::memory_order_relaxed);
  p->~process();
  alloc::deallocate(p);
}

// A supervisor spawns its children linked and traps exits: the exit reaches
// it as a message and it reports the crash itself (supervisors/reports.cpp).
// Any other crashing process is reported here, as Erlang's error logger
// reports "Error in process ... with exit value ..." — except the root,
// whose reason node::run returns to its caller.
bool supervised(node_state* n, process* p) noexcept {
  if (!p->rel || !p->parent.valid() || !p->rel->has_link(p->parent)) return false;
  // On a worker: the parent's block stays readable until our next quiescent
  // point. Its trap_exit is a relaxed hint, as for node shutdown.
  process* parent = n->table.lookup(p->parent);
  return parent && parent->trap_exit.load(std::memory_order_relaxed);
}

void report_crash(process* p, const exit_reason& r) noexcept {
  if (!logging_enabled()) return;
  try {
    log_report("Error in process " + process_label(p->id) + " with exit value: " + r.to_string() +
               " (not supervised; spawned by " + (p->parent.valid() ? p->parent.to_string() : "a thread") + ")");
  } catch (...) {  // out of memory: the report is lost, the process ends anyway
  }
}

void process_finished(rt::fiber* f) noexcept {
  process* p = process::from(f);
  if (f->rt_flags & rt::fiber_flag_no_stack) {
    destroy_body(p->current_body);
    p->current_body = nullptr;
    p->final_reason = new exit_reason(exit_reason::error(
        "herd::no_stack", "a hibernated process woke up and no stack could be mapped"));
  }
  node_state* n = current_node();
  // Before the unpublish: a tracer that no longer finds the pid must be able
  // to count on the process having let go of it (trace.hpp).
  trace_exit(p, p->final_reason ? *p->final_reason : exit_reason::normal());
  if (p->crashed && p->final_reason && !p->is_root && !supervised(n, p)) report_crash(p, *p->final_reason);
  n->table.unpublish(p->id);
  // The slot can be reused at once: a stale pid's lookup finds the new
  // process and rejects it by generation. Only the control block must wait
  // for the grace period (a sender may still hold a pointer to it).
  n->table.release(p->id, rt::worker_index());
  release_name(p);
  // Before the links and monitors: a DOWN must not beat the owner's tables'
  // deletion (exit_watch.hpp).
  run_exit_watchers(p, p->final_reason ? *p->final_reason : exit_reason::normal());
  announce_death(p, p->final_reason ? *p->final_reason : exit_reason::normal());
  n->note_exit(p);
  rt::retire(p, &free_process);
}

// Async-signal-safe.
std::size_t put(char* buf, std::size_t cap, std::size_t at, const char* s) noexcept {
  while (*s && at + 1 < cap) buf[at++] = *s++;
  return at;
}
std::size_t put_u(char* buf, std::size_t cap, std::size_t at, uint64_t v) noexcept {
  char tmp[24];
  int n = 0;
  do {
    tmp[n++] = char('0' + v % 10);
    v /= 10;
  } while (v);
  while (n && at + 1 < cap) buf[at++] = tmp[--n];
  return at;
}

std::size_t process_describe(const rt::fiber* f, char* buf, std::size_t cap) noexcept {
  auto* p = static_cast<const process*>(f);
  std::size_t at = put(buf, cap, 0, "pid <");
  at = put_u(buf, cap, at, p->id.index);
  at = put(buf, cap, at, ".");
  at = put_u(buf, cap, at, p->id.generation);
  at = put(buf, cap, at, ">");
  if (interned_name* n = p->name.load(std::memory_order_relaxed)) {
    at = put(buf, cap, at, " name=");
    at = put(buf, cap, at, n->text.c_str());
  }
  if (cap) buf[at] = 0;
  return at;
}

}  // namespace

[[noreturn]] void abandon(process* p) {
  char buf[256];
  process_describe(p, buf, sizeof buf);
  const exit_reason* why = p->pending_exit.load(std::memory_order_acquire);
  std::string reason = why ? final_from_pending(*why).to_string() : std::string("?");
  std::fprintf(stderr,
               "herd: %s swallowed its exit (%s) %u times for %llu ms; ending it without unwinding "
               "the frames that catch it (their destructors do not run)\n",
               buf, reason.c_str(), p->exits_swallowed,
               static_cast<unsigned long long>(rt::now_ms() - p->exit_first_thrown_ms));
  if (why) p->final_reason = new exit_reason(final_from_pending(*why));
  p->exits_swallowed = UINT32_MAX;  // blocking calls from the destructors below return at once
  destroy_body(p->running_body);    // not on the stack: its captures can be freed
  p->running_body = nullptr;
  rt::end_fiber_now(p);
}

exit_reason reason_of_current_exception() {
  auto demangle = [](const char* name) {
    int status = 0;
    char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    std::string s = (status == 0 && d) ? d : name;
    std::free(d);
    return s;
  };
  try {
    throw;
  } catch (const std::exception& e) {
    return exit_reason::error(demangle(typeid(e).name()), e.what());
  } catch (...) {
    std::type_info* t = abi::__cxa_current_exception_type();
    return exit_reason::error(t ? demangle(t->name()) : "unknown", "");
  }
}

// The exit is thrown as exit_unwind at every blocking point until the stack
// has unwound. C++ cannot stop a catch (...) from swallowing an exception (a
// forced unwind, as pthread_cancel's, ends in std::terminate when the catch
// block finishes inside the noexcept __cxa_end_catch), so code that swallows
// it in a loop would spin for ever. Such a process — the exit swallowed more
// than 1,000 times over more than a second — is ended where it stands: the
// fiber is switched away from and never resumed, its stack recycled, and the
// frames that kept catching are not unwound (what their locals own leaks).
// It is reported. A loop that swallows for a while and then returns still
// unwinds normally.
bool act_on_pending_exit(process* p) {
  // Already unwinding, or being abandoned (the body's destructors run): do not block.
  if (std::uncaught_exceptions() > 0 || p->exits_swallowed == UINT32_MAX) return true;
  // now_ms(), not the per-worker coarse clock: the process may move to a
  // worker whose coarse clock is behind.
  uint64_t now = rt::now_ms();
  if (p->exit_first_thrown_ms == 0) {
    p->exit_first_thrown_ms = now ? now : 1;
  } else if (++p->exits_swallowed > 1000 && now > p->exit_first_thrown_ms + 1000) {
    abandon(p);
  }
  throw exit_unwind{};
}

void check_exit_after_blocking() {
  if (process* p = self_process()) {
    drain_mailbox(p);
    exit_pending_at_blocking_point(p);
  }
}

bool blocking_point() {
  process* p = self_process();
  if (!p) return false;
  drain_mailbox(p);
  return exit_pending_at_blocking_point(p);
}

process* allocate_process(std::size_t body_size) {
  std::size_t sz = sizeof(process) + ((body_size + 15) & ~std::size_t(15));
  auto* p = new (alloc::allocate(sz)) process;
  p->body_size = static_cast<uint32_t>(body_size);
  p->ops = &process_ops;
  return p;
}

void* body_storage(process* p) noexcept { return p->inline_body(); }
void set_body(process* p, body* b) noexcept { p->current_body = b; }

void discard_process(process* p) noexcept {
  delete p->pending_exit.load(std::memory_order_relaxed);
  delete p->rel;
  p->~process();
  alloc::deallocate(p);
}

void* allocate_body(std::size_t size) { return alloc::allocate(size); }

void free_body(body* b) noexcept {
  b->~body();
  alloc::deallocate(b);
}

body* take_continuation(hibernation&& h) noexcept { return h.release(); }

[[noreturn]] void throw_hibernate(body* b) {
  try {
    require_process("herd::hibernate");
  } catch (...) {
    free_body(b);  // the continuation will never run
    throw;
  }
  throw hibernate_unwind{b};
}

pid launch(process* p, const spawn_options& o) {
  node_state* n = current_node();
  auto fail = [&](const std::string& why) -> pid {
    destroy_body(p->current_body);
    p->current_body = nullptr;
    discard_process(p);
    throw spawn_error(why);
  };
  if (!n) return fail("herd: spawn with no running node");
  p->prio = o.prio;
  if (o.max_mailbox.messages) {
    p->mbox.set_limit(static_cast<uint32_t>(std::min<std::size_t>(o.max_mailbox.messages, UINT32_MAX)),
                      o.max_mailbox.kill, o.max_mailbox.log);
  }
  pid id;
  if (!n->table.allocate(id, rt::worker_index()))
    return fail("herd: cannot spawn: no free process slot; the node's limit is " +
                std::to_string(n->table.capacity()) + " processes (node_options::max_actors " +
                std::to_string(n->opts.max_actors) + ", rounded up by 64 slots per worker); raise max_actors");
  p->id = id;
  std::string err;
  if (!(o.compact_stack ? rt::prepare_compact_stack(p, o.stack_size, &err) : rt::prepare_stack(p, o.stack_size, &err))) {
    n->table.release(id, rt::worker_index());
    return fail(err.empty() ? "herd: cannot spawn: no stack" : err);
  }
  p->spawned_ms = rt::coarse_now_ms();
  p->parent = self();
  n->table.publish(id, p);
  if (!o.name.empty() && !register_process(o.name, p)) {
    n->table.unpublish(id);
    rt::release_stack(p);
    n->table.release(id, rt::worker_index());
    return fail("herd: cannot spawn: the name '" + std::string(o.name) + "' is taken");
  }
  n->note_spawn();
  if (p->on_launch) {
    p->on_launch(p->on_launch_ctx, id);
    p->on_launch = nullptr;
  }
  rt::start(p);
  return id;
}

}  // namespace herd::detail

namespace herd {

pid self() noexcept {
  detail::process* p = detail::self_process();
  return p ? p->id : no_pid;
}

[[noreturn]] void exit(exit_reason reason) {
  detail::process* p = detail::require_process("herd::exit");
  auto* r = new exit_reason(std::move(reason));
  herd::exit_reason* expected = nullptr;
  // acq_rel: pairs with the acquire loads at blocking points.
  if (!p->pending_exit.compare_exchange_strong(expected, r, std::memory_order_acq_rel)) delete r;
  throw detail::exit_unwind{};
}

pid parent() noexcept {
  detail::process* p = detail::self_process();
  return p ? p->parent : no_pid;
}

void exit(pid target, exit_reason reason) {
  detail::send_signal(target, detail::kind_exit, detail::sig_exit{self(), std::move(reason), false});
}

void yield() {
  detail::process* p = detail::require_process("herd::yield");
  detail::drain_mailbox(p);
  if (detail::exit_pending_at_blocking_point(p)) return;
  rt::yield();
  detail::drain_mailbox(p);
  detail::exit_pending_at_blocking_point(p);
}

void sleep(std::chrono::milliseconds d) {
  detail::process* p = detail::require_process("herd::sleep");
  uint64_t deadline = rt::deadline_after(d);
  for (;;) {
    detail::drain_mailbox(p);
    if (detail::exit_pending_at_blocking_point(p)) return;
    if (rt::now_ms() >= deadline) return;
    rt::park_until(p, deadline);
  }
}

std::size_t mailbox_size() noexcept {
  detail::process* p = detail::self_process();
  if (!p) return 0;
  return p->mbox.length();
}

}  // namespace herd
