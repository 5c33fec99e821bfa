// Process snapshots for the observer (introspect.hpp).
//
// Design
//  * No stop-the-world: a scan walks the process table's published slots
//    (process_table::for_each, seq_cst slot loads) and reads only fields
//    that other threads may read — relaxed atomics (run state, mailbox
//    counters, reductions, low_sp/stack_top, last_run_ms), the registered
//    name (an immutable interned string freed a grace period after release,
//    read with acquire), and fields written before the pid was published
//    (spawned_ms, parent, body_size, stack_class, initial_call, kind). Each row is thus a hint a
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
#include <herd/runtime/thread_safety.hpp>

#include "node_state.hpp"
#include "process.hpp"
#include "names.hpp"
#include "signals.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <unordered_map>

namespace herd::detail {

uint64_t messages_made_total() noexcept;  // message.cpp

void set_labels(process* p, const char* initial_call, process_kind kind) noexcept {
  p->initial_call = initial_call;
  p->kind = static_cast<uint8_t>(kind);
}

struct info_answer {
  herd::rt::mutex m;
  std::condition_variable cv;
  bool done HERD_GUARDED_BY(m) = false;
  introspect::relations r HERD_GUARDED_BY(m);
};

uint32_t relations_bytes_of(const process* p) noexcept {
  return p->rel ? p->rel->bytes() : 0;
}

void answer_info(process* p, info_answer& a) noexcept {
  try {
    introspect::relations r;
    r.answered = true;
    r.relations_bytes = relations_bytes_of(p);
    p->relations_bytes.store(static_cast<uint32_t>(r.relations_bytes), std::memory_order_relaxed);
    // Hibernated: what waits to run is a continuation on the heap.
    if (body* b = p->current_body; b && !b->inline_storage) r.continuation_bytes = b->heap_bytes;
    r.trap_exit = p->trap_exit.load(std::memory_order_relaxed);
    if (relations* rel = p->rel) {
      rel->links.for_each([&](const link_entry& l) { r.links.push_back(pid{uint32_t(l.key), uint32_t(l.key >> 32)}); });
      rel->refs.for_each([&](const ref_entry& e) {
        if (relations::role_of(e) == ref_role::monitoring) r.monitors.push_back(e.other);
        else if (relations::role_of(e) == ref_role::watcher) r.monitored_by.push_back(e.other);
      });
    }
    for (message* m = p->mbox.save_head; m; m = next_of(m)) r.mailbox_bytes += message::payload_offset + m->ops->size;
    herd::rt::lock_guard<herd::rt::mutex> g(a.m);
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
const char* const kind_names[] = {"worker", "server", "supervisor", "acceptor", "connection"};

// spawn_label's __PRETTY_FUNCTION__ holds the type after "[with F = ";
// an initial_call given at spawn is taken as it is.
std::string initial_call_of(const process* p) {
  const char* s = p->initial_call;
  if (!s) return {};
  std::string_view v(s);
  constexpr std::string_view with = "[with F = ";
  auto at = v.find(with);
  if (at == std::string_view::npos) return std::string(v);
  v.remove_prefix(at + with.size());
  if (!v.empty() && v.back() == ']') v.remove_suffix(1);
  return std::string(v);
}

process_kind kind_of(const process* p) noexcept { return static_cast<process_kind>(p->kind); }

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

// The stack's pages in use: what the touched bytes cost in memory.
uint64_t stack_pages_bytes(const process* p) noexcept {
  constexpr uint64_t page = 4096;
  return (touched_stack(p) + page - 1) / page * page;
}

status status_of(const process* p, const running_set& run) noexcept {
  auto st = static_cast<rt::run_state>(p->state.load(std::memory_order_relaxed));
  if (st == rt::run_state::dead || p->pending_exit.load(std::memory_order_relaxed)) return status::exiting;
  if (st == rt::run_state::waiting)
    return p->stack_top.load(std::memory_order_relaxed) ? status::waiting : status::hibernated;
  return run.has(p) ? status::running : status::runnable;
}

uint64_t memory_of(const process* p, uint64_t mailbox) noexcept {
  return stack_pages_bytes(p) + mailbox * mailbox_message_estimate + sizeof(process) + p->body_size +
         p->relations_bytes.load(std::memory_order_relaxed);
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
  r.initial_call = initial_call_of(p);
  r.kind = kind_of(p);
  r.state = status_of(p, run);
  r.mailbox = mailbox_len(p);
  r.reductions = p->reductions.load(std::memory_order_relaxed);
  r.memory = memory_of(p, r.mailbox);
  r.age_ms = now > p->spawned_ms ? now - p->spawned_ms : 0;
  if (const char* proto = p->protocol.load(std::memory_order_relaxed)) r.protocol = proto;
  r.out_frames = p->out_frames.load(std::memory_order_relaxed);
  r.out_bytes = p->out_bytes.load(std::memory_order_relaxed);
  r.hibernated = r.state != status::exiting && p->stack_top.load(std::memory_order_relaxed) == 0 &&
                 static_cast<rt::run_state>(p->state.load(std::memory_order_relaxed)) == rt::run_state::waiting;
  return r;
}

// Walks a sample in slot order alongside the table's own slot-order pass:
// O(1) a process.
struct baseline_cursor {
  const reductions_sample* s;
  std::size_t at = 0;
  uint64_t delta(const process* p, uint64_t reds) noexcept {
    if (!s) return reds;  // no baseline: since the start (a first sample sorts by the total)
    const auto& v = s->by_slot;
    while (at < v.size() && v[at].first.index < p->id.index) ++at;
    // A process that was not there then (or a reused slot): all of its
    // reductions are this interval's.
    if (at < v.size() && v[at].first == p->id && v[at].second <= reds) return reds - v[at].second;
    return reds;
  }
};

uint64_t key_of(const process* p, sort_key k, uint64_t now) noexcept {
  switch (k) {
    case sort_key::reductions_rate: return 0;  // the scan uses the cursor's delta
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
  uint64_t delta;  // reductions since the query's baseline
  uint64_t reds;   // the reductions read in the pass (with a baseline or sample)
};
// "a ranks before b": larger key, then smaller index. The heap keeps the
// worst kept entry at its front.
bool better(const ranked& a, const ranked& b) noexcept {
  return a.key != b.key ? a.key > b.key : a.index < b.index;
}

}  // namespace

const char* to_string(status s) noexcept { return status_names[static_cast<int>(s)]; }

const char* to_string(process_kind k) noexcept {
  auto i = static_cast<std::size_t>(k);
  return i < std::size(kind_names) ? kind_names[i] : "worker";
}

std::optional<process_kind> kind_from(std::string_view s) noexcept {
  for (std::size_t i = 0; i < std::size(kind_names); ++i)
    if (s == kind_names[i]) return static_cast<process_kind>(i);
  return std::nullopt;
}

std::optional<status> status_from(std::string_view s) noexcept {
  for (int i = 0; i < 5; ++i)
    if (s == status_names[i]) return static_cast<status>(i);
  return std::nullopt;
}

void set_protocol(const char* protocol) noexcept {
  if (process* p = detail::self_process()) p->protocol.store(protocol, std::memory_order_relaxed);
}

void set_out_queue(uint64_t frames, uint64_t bytes) noexcept {
  if (process* p = detail::self_process()) {
    p->out_frames.store(static_cast<uint32_t>(std::min<uint64_t>(frames, UINT32_MAX)), std::memory_order_relaxed);
    p->out_bytes.store(bytes, std::memory_order_relaxed);
  }
}

process_list processes(const process_query& q) {
  process_list out;
  detail::node_state* n = detail::current_node();
  if (!n || q.limit == 0) return out;
  const running_set run = running_now();
  const uint64_t now = rt::coarse_now_ms();
  std::vector<ranked> heap;
  heap.reserve(std::min<std::size_t>(q.limit, 1 << 16));
  baseline_cursor base{q.since};
  if (q.sample) {
    q.sample->by_slot.clear();
    q.sample->at_ms = rt::now_ms();
  }
  rt::foreign_read_guard g;
  n->table.for_each([&](const process* p) {
    ++out.total;
    uint64_t delta = 0, reds = 0;
    if (q.since || q.sample) {
      reds = p->reductions.load(std::memory_order_relaxed);
      delta = base.delta(p, reds);
      if (q.sample) q.sample->by_slot.emplace_back(p->id, reds);
    }
    if (q.state && status_of(p, run) != *q.state) return;
    if (q.kind && kind_of(p) != *q.kind) return;
    if (q.name) {
      detail::interned_name* nm = p->name.load(std::memory_order_acquire);
      if (!nm || nm->text.find(*q.name) == std::string::npos) return;
    }
    ++out.matched;
    ranked r{q.sort == sort_key::reductions_rate ? delta : key_of(p, q.sort, now), p->id.index, p, delta, reds};
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
  for (const ranked& r : heap) {
    out.rows.push_back(row_of(r.p, run, now));
    out.rows.back().reductions_delta = r.delta;
    // The total the delta was taken from (and the next baseline holds).
    if (q.since || q.sample) out.rows.back().reductions = r.reds;
  }
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
  d.stack_pages = stack_pages_bytes(p);
  d.control_block = sizeof(process) + p->body_size;
  d.relations_bytes = p->relations_bytes.load(std::memory_order_relaxed);
  uint64_t last = p->last_run_ms.load(std::memory_order_relaxed);
  d.last_ran_ms_ago = last && now > last ? now - last : 0;
  d.trap_exit = p->trap_exit.load(std::memory_order_relaxed);
  return d;
}

std::optional<relations> ask_relations(pid id, std::chrono::milliseconds wait) {
  if (!detail::current_node()) return std::nullopt;
  auto a = std::make_shared<detail::info_answer>();
  if (!detail::send_signal(id, detail::kind_info, detail::sig_info{a})) return std::nullopt;
  herd::rt::unique_lock g(a->m);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (!a->done)
    if (a->cv.wait_until(g.native(), deadline) == std::cv_status::timeout && !a->done)
      return relations{};  // answered = false
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
