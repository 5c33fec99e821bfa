// link / unlink / monitor / demonitor / trap_exit and spawn_link /
// spawn_monitor: the owner's side. The other side learns through signals
// (signals.cpp); a request to a process that is gone is answered at once by
// a signal to ourselves, so it is acted on in order at our next blocking point.
#include <herd/actors/detail/remote.hpp>
#include <herd/actors/links.hpp>
#include <herd/actors/registry.hpp>

#include "node_state.hpp"
#include "process.hpp"
#include "signals.hpp"

#include <atomic>

namespace herd::detail {
namespace {

std::atomic<uint64_t> g_ref_blocks{0};
__attribute__((tls_model("initial-exec"))) thread_local uint64_t tl_ref_next = 0;
__attribute__((tls_model("initial-exec"))) thread_local uint64_t tl_ref_end = 0;

}  // namespace

// Refs come from per-thread blocks of 2^20, so making one costs no shared
// read-modify-write. Not inlined: the thread_local must be this thread's.
[[gnu::noinline]] monitor_ref new_ref() noexcept {
  if (tl_ref_next == tl_ref_end) {
    uint64_t block = g_ref_blocks.fetch_add(1, std::memory_order_relaxed);
    tl_ref_next = (block << 20) + 1;
    tl_ref_end = (block + 1) << 20;
  }
  return monitor_ref{tl_ref_next++};
}

pid launch_related(process* child, const spawn_options& o, spawn_relation rel) {
  process* parent = self_process();
  if (parent && rel.kind == spawn_relation::link) {
    relations_of(child).add_link(parent->id);  // the child is not running yet: ours to set
  } else if (parent && rel.kind == spawn_relation::monitor) {
    relations_of(child).add(ref_role::watcher, rel.ref.id, parent->id);
  }
  // The child's pid is known only once launch has allocated it, and launch
  // runs the child at once; so the parent's side is recorded through
  // on_launch, before the child can run.
  struct hook_ctx {
    process* parent;
    spawn_relation rel;
  } ctx{parent, rel};
  child->on_launch = [](void* c, pid id) {
    auto* h = static_cast<hook_ctx*>(c);
    if (!h->parent) return;
    if (h->rel.kind == spawn_relation::link) relations_of(h->parent).add_link(id);
    else if (h->rel.kind == spawn_relation::monitor)
      relations_of(h->parent).add(ref_role::monitoring, h->rel.ref.id, id);
  };
  child->on_launch_ctx = &ctx;
  return launch(child, o);
}

}  // namespace herd::detail

namespace herd {

using namespace detail;

void link(pid target) {
  process* p = require_process("herd::link");
  if (target == p->id) return;
  // An invalid pid names no process: noproc, and nothing to remember.
  if (target.valid()) relations_of(p).add_link(target);
  // Sent even when already linked here: the other side may have dropped its
  // half when an unlink crossed an earlier link request.
  if (!target.valid() || !send_signal(target, kind_link, sig_link{p->id}))
    send_signal(p->id, kind_exit, sig_exit{target, exit_reason::noproc(), true});
}

void unlink(pid target) {
  process* p = require_process("herd::unlink");
  if (!p->rel || !p->rel->drop_link(target)) return;
  send_signal(target, kind_unlink, sig_unlink{p->id});
}

bool trap_exit(bool on) {
  process* p = require_process("herd::trap_exit");
  bool was = p->trap_exit.load(std::memory_order_relaxed);
  p->trap_exit.store(on, std::memory_order_relaxed);
  return was;
}

bool trapping_exits() noexcept {
  process* p = self_process();
  return p && p->trap_exit.load(std::memory_order_relaxed);
}

monitor_ref monitor(pid target) {
  process* p = require_process("herd::monitor");
  monitor_ref ref = new_ref();
  relations_of(p).add(ref_role::monitoring, ref.id, target);
  if (!send_signal(target, kind_monitor, sig_monitor{p->id, ref.id}))
    send_signal(p->id, kind_down, down{ref, target, exit_reason::noproc()});
  return ref;
}

monitor_ref monitor(std::string_view name) {
  require_process("herd::monitor");  // before the lookup: the rule, not noproc, is the answer
  return monitor(whereis(name).value_or(no_pid));
}

monitor_ref monitor(std::string_view name, std::string_view node) {
  process* p = require_process("herd::monitor");
  const remote_signal_hooks* h = remote_signals();
  monitor_ref ref = new_ref();
  pid handle = no_pid;
  if (h && !h->monitor_name(p->id, ref.id, name, node, &handle)) return monitor(name);  // this node
  // Recorded under the handle even when the hook has already answered
  // noconnection: that `down` is a signal to us, acted on after this.
  relations_of(p).add(ref_role::monitoring, ref.id, handle);
  if (!h) send_signal(p->id, kind_down, down{ref, no_pid, exit_reason::noconnection()});  // no distribution
  return ref;
}

bool demonitor(monitor_ref ref) {
  process* p = require_process("herd::demonitor");
  pid target;
  if (!p->rel || !p->rel->drop(ref_role::monitoring, ref.id, &target)) {
    drop_tagged(p, nullptr, true, ref.id);  // its `down` may be filed already: never received now
    return false;
  }
  send_signal(target, kind_demonitor, sig_demonitor{p->id, ref.id});
  return true;
}

}  // namespace herd
