// Process snapshots for the observer (introspect.hpp).
//
// Design
//  * No stop-the-world: a scan walks the process table's published slots
//    (process_table::for_each, seq_cst slot loads) and reads only fields
//    that other threads may read — relaxed atomics (run state, mailbox
//    counters, reductions, low_sp/stack_top, last_run_ms), the registered
//    name (an immutable interned string freed a grace period after release,
//    read with acquire), and fields written before the pid was published
//    (spawned_ms, parent, body_size, stack_class). Each row is thus a hint a
//    moment old, never a torn or freed read.
//  * Memory safety: the caller is a plain thread, so the whole scan runs
//    inside one rt::foreign_read_guard — no control block it reached through
//    the table is freed until the guard ends (qsbr.hpp). A scan of 1,000,000
//    slots holds the guard for some milliseconds; reclamation waits that long.
//  * Top-k: a bounded heap of (key, control block) of size `limit`, so the
//    scan allocates nothing per process; names are read only for the rows
//    kept (or for every process when a name filter asks).
//  * Status: the fiber's run state (relaxed) plus pending_exit, stack_top
//    (0: no stack = hibernated) and the workers' `running` slots (a snapshot
//    taken just before the scan).
//  * Relations come from the owner (links and monitors change only there):
//    a kind_info signal holding a shared answer; the owner fills it at its
//    drain under the answer's mutex (never held across a suspension) and
//    notifies; the asker waits with a deadline. If the process ends first,
//    its mailbox is freed and the answer is simply never filled: the asker
//    times out (and the shared_ptr keeps the answer alive for both sides).
#include <herd/actors/introspect.hpp>
#include <herd/runtime/clock.hpp>
#include <herd/runtime/runtime.hpp>
#include <herd/runtime/sched.hpp>

#include "node_state.hpp"
#include "process.hpp"
#include "registry_impl.hpp"
#include "signals.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <unordered_map>

namespace herd::detail {

uint64_t messages_made_total() noexcept;  // message.cpp

struct info_answer {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  introspect::relations r;
};

void answer_info(process* p, info_answer& a) noexcept {
  try {
    introspect::relations r;
    r.answered = true;
    r.trap_exit = p->trap_exit.load(std::memory_order_relaxed);
    if (relations* rel = p->rel) {
      rel->links.for_each([&](const link_entry& l) { r.links.push_back(pid{uint32_t(l.key), uint32_t(l.key >> 32)}); });
      rel->refs.for_each([&](const ref_entry& e) {
        if (relations::role_of(e) == ref_role::monitoring) r.monitors.push_back(e.other);
        else if (relations::role_of(e) == ref_role::watcher) r.monitored_by.push_back(e.other);
      });
    }
    for (message* m = p->mbox.save_head; m; m = next_of(m)) r.mailbox_bytes += message::payload_offset + m->ops->size;
    std::lock_guard<std::mutex> g(a.m);
    a.r = std::move(r);
    a.done = true;
    a.cv.notify_all();
  } catch (...) {
    // Out of memory: left unanswered, the asker reports "busy".
  }
}

}  // namespace herd::detail

namespace herd::introspect {
namespace {

using detail::process;

const char* const status_names[] = {"running", "runnable", "waiting", "hibernated", "exiting"};

struct running_set {
  std::vector<const void*> fibers;
  bool has(const process* p) const noexcept {
    return std::find(fibers.begin(), fibers.end(), static_cast<const rt::fiber*>(p)) != fibers.end();
  }
};

running_set running_now() {
  running_set s;
  rt::runtime_metrics m;
  if (rt::current_metrics(m))
    for (auto& w : m.workers)
      if (w.running) s.fibers.push_back(w.running);
  return s;
}

uint64_t mailbox_len(const process* p) noexcept { return p->mbox.length(); }

uint64_t touched_stack(const process* p) noexcept {
  uintptr_t top = p->stack_top.load(std::memory_order_relaxed);
  uintptr_t low = p->low_sp.load(std::memory_order_relaxed);
  // low_sp may still belong to a previous stack for a moment: only trust it
  // when it lies within the stack below top.
  if (!top || !low || low > top || top - low > rt::stack_size_of(p)) return 0;
  return top - low;
}

status status_of(const process* p, const running_set& run) noexcept {
  auto st = static_cast<rt::run_state>(p->state.load(std::memory_order_relaxed));
  if (st == rt::run_state::dead || p->pending_exit.load(std::memory_order_relaxed)) return status::exiting;
  if (st == rt::run_state::waiting)
    return p->stack_top.load(std::memory_order_relaxed) ? status::waiting : status::hibernated;
  return run.has(p) ? status::running : status::runnable;
}

uint64_t memory_of(const process* p, uint64_t mailbox) noexcept {
  return touched_stack(p) + mailbox * mailbox_message_estimate + sizeof(process) + p->body_size;
}

std::string name_of(const process* p) {
  // acquire: pairs with register_process's release store (the string).
  detail::interned_name* n = p->name.load(std::memory_order_acquire);
  return n ? n->text : std::string();
}

process_row row_of(const process* p, const running_set& run, uint64_t now) {
  process_row r;
  r.id = p->id;
  r.name = name_of(p);
  r.state = status_of(p, run);
  r.mailbox = mailbox_len(p);
  r.reductions = p->reductions.load(std::memory_order_relaxed);
  r.memory = memory_of(p, r.mailbox);
  r.age_ms = now > p->spawned_ms ? now - p->spawned_ms : 0;
  r.hibernated = r.state != status::exiting && p->stack_top.load(std::memory_order_relaxed) == 0 &&
                 static_cast<rt::run_state>(p->state.load(std::memory_order_relaxed)) == rt::run_state::waiting;
  return r;
}

uint64_t key_of(const process* p, sort_key k, uint64_t now) noexcept {
  switch (k) {
    case sort_key::mailbox: return mailbox_len(p);
    case sort_key::reductions: return p->reductions.load(std::memory_order_relaxed);
    case sort_key::memory: return memory_of(p, mailbox_len(p));
    case sort_key::age: return now > p->spawned_ms ? now - p->spawned_ms : 0;
  }
  return 0;
}

struct ranked {
  uint64_t key;
  uint32_t index;  // ties: the lower slot first, so equal keys list in a stable order
  const process* p;
};
// "a ranks before b": larger key, then smaller index. The heap keeps the
// worst kept entry at its front.
bool better(const ranked& a, const ranked& b) noexcept {
  return a.key != b.key ? a.key > b.key : a.index < b.index;
}

}  // namespace

const char* to_string(status s) noexcept { return status_names[static_cast<int>(s)]; }

std::optional<status> status_from(std::string_view s) noexcept {
  for (int i = 0; i < 5; ++i)
    if (s == status_names[i]) return static_cast<status>(i);
  return std::nullopt;
}

process_list processes(const process_query& q) {
  process_list out;
  detail::node_state* n = detail::current_node();
  if (!n || q.limit == 0) return out;
  const running_set run = running_now();
  const uint64_t now = rt::coarse_now_ms();
  std::vector<ranked> heap;
  heap.reserve(std::min<std::size_t>(q.limit, 1 << 16));
  rt::foreign_read_guard g;
  n->table.for_each([&](const process* p) {
    ++out.total;
    if (q.state && status_of(p, run) != *q.state) return;
    if (q.name) {
      detail::interned_name* nm = p->name.load(std::memory_order_acquire);
      if (!nm || nm->text.find(*q.name) == std::string::npos) return;
    }
    ++out.matched;
    ranked r{key_of(p, q.sort, now), p->id.index, p};
    if (heap.size() < q.limit) {
      heap.push_back(r);
      std::push_heap(heap.begin(), heap.end(), better);
    } else if (better(r, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), better);
      heap.back() = r;
      std::push_heap(heap.begin(), heap.end(), better);
    }
  });
  std::sort_heap(heap.begin(), heap.end(), better);  // best first
  out.rows.reserve(heap.size());
  for (const ranked& r : heap) out.rows.push_back(row_of(r.p, run, now));
  return out;
}

std::optional<process_detail> process_info(pid id) {
  detail::node_state* n = detail::current_node();
  if (!n) return std::nullopt;
  const running_set run = running_now();
  const uint64_t now = rt::coarse_now_ms();
  rt::foreign_read_guard g;
  const process* p = n->table.lookup(id);
  if (!p) return std::nullopt;
  process_detail d;
  d.row = row_of(p, run, now);
  d.parent = p->parent;
  d.stack_size = rt::stack_size_of(p);
  d.stack_touched = touched_stack(p);
  uint64_t last = p->last_run_ms.load(std::memory_order_relaxed);
  d.last_ran_ms_ago = last && now > last ? now - last : 0;
  d.trap_exit = p->trap_exit.load(std::memory_order_relaxed);
  return d;
}

std::optional<relations> ask_relations(pid id, std::chrono::milliseconds wait) {
  if (!detail::current_node()) return std::nullopt;
  auto a = std::make_shared<detail::info_answer>();
  if (!detail::send_signal(id, detail::kind_info, detail::sig_info{a})) return std::nullopt;
  std::unique_lock<std::mutex> g(a->m);
  if (!a->cv.wait_for(g, wait, [&] { return a->done; })) return relations{};  // answered = false
  return std::move(a->r);
}

std::vector<pid> pids_of(const std::vector<const void*>& fibers) {
  std::vector<pid> out(fibers.size(), no_pid);
  detail::node_state* n = detail::current_node();
  if (!n || fibers.empty()) return out;
  std::unordered_map<const void*, std::size_t> want;
  for (std::size_t i = 0; i < fibers.size(); ++i) want.emplace(fibers[i], i);
  std::vector<std::pair<const void*, pid>> found;
  {
    rt::foreign_read_guard g;
    n->table.for_each([&](const process* p) {
      if (want.count(static_cast<const rt::fiber*>(p))) found.emplace_back(static_cast<const rt::fiber*>(p), p->id);
    });
  }
  for (std::size_t i = 0; i < fibers.size(); ++i)
    for (auto& [f, id] : found)
      if (f == fibers[i]) out[i] = id;
  return out;
}

uint64_t messages_made() noexcept { return detail::messages_made_total(); }

}  // namespace herd::introspect
