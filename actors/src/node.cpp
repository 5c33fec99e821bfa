// The node: runtime + process table + root process. Shutdown, in order:
//  1. the root exits (its reason is what run() returns);
//  2. the processes that trap exits (supervisors) get `shutdown` first and
//     stop their children in order; after a third of shutdown_timeout (or
//     when none is left) every process gets `shutdown`, after two thirds
//     `kill` — checked every 10 ms, so one spawned meanwhile (a destructor
//     that starts a process, a supervisor restarting a child) gets it too;
//  3. the node waits until every process has finished (woken early by the
//     last exit); a process still alive after shutdown_timeout cannot be
//     unwound — it never reaches a blocking point — and dropping its stack
//     would leak what it owns, so the node reports it (pid, name) and aborts;
//  4. the runtime stops (workers joined, everything retired is freed).
#include <herd/actors/node.hpp>
#include <herd/actors/process.hpp>
#include <herd/actors/spawn.hpp>
#include <herd/runtime/sched.hpp>

#include "node_state.hpp"
#include "process.hpp"
#include "names.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <vector>
#include <algorithm>

namespace herd::detail {

std::ptrdiff_t live_messages_total() noexcept;

// Spawns the root: flagged before it can run, so its exit is never missed.
pid spawn_root(std::function<void()> fn, const spawn_options& o) {
  using B = body_impl<std::function<void()>>;
  process* p = allocate_process(sizeof(B));
  auto* b = new (body_storage(p)) B(std::move(fn));
  b->inline_storage = true;
  set_body(p, b);
  p->is_root = true;
  return launch(p, o);
}

std::atomic<node_state*> g_node{nullptr};

namespace {
std::terminate_handler g_prev_terminate = nullptr;

[[noreturn]] void terminate_handler() {
  char buf[256];
  std::size_t n = 0;
  if (process* p = self_process()) n = p->ops->describe(p, buf, sizeof buf);
  if (n) std::fprintf(stderr, "herd: std::terminate called in actor %s\n", buf);
  else std::fprintf(stderr, "herd: std::terminate called outside any actor\n");
  if (g_prev_terminate) g_prev_terminate();
  std::abort();
}
}  // namespace

void set_current_node(node_state* n) noexcept { g_node.store(n, std::memory_order_release); }

node_state::node_state(const node_options& o, unsigned w)
    : opts(o), workers(w), table(o.max_actors, w), per_thread(new counts[w + 1]) {}

void node_state::note_spawn() noexcept {
  uint32_t w = rt::worker_index();
  if (w < workers) {
    auto& c = per_thread[w].spawned;
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  } else {
    rt::lock_guard<rt::mutex> g(foreign_counts_m);
    auto& c = per_thread[workers].spawned;
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
}

void node_state::note_exit(process* p) noexcept {
  uint32_t w = rt::worker_index();
  auto& c = per_thread[w < workers ? w : workers].exited;
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (p->is_root || (draining.load(std::memory_order_relaxed) && live() == 0)) {
    rt::lock_guard<rt::mutex> g(m);
    if (p->is_root) {
      root_done = true;
      root_reason = p->final_reason ? *p->final_reason : exit_reason::normal();
    }
    cv.notify_all();
  }
}

std::size_t node_state::live() const noexcept {
  uint64_t s = 0, e = 0;
  for (unsigned i = 0; i <= workers; ++i) {
    s += per_thread[i].spawned.load(std::memory_order_relaxed);
    e += per_thread[i].exited.load(std::memory_order_relaxed);
  }
  return s > e ? static_cast<std::size_t>(s - e) : 0;
}

}  // namespace herd::detail

namespace herd {

struct node::impl {
  explicit impl(const node_options& o)
      : opts(o),
        runtime(rt::runtime_options{.workers = o.workers,
                                    .deterministic = o.deterministic,
                                    .stack_size = o.stack_size,
                                    .guard_size = o.guard_size,
                                    .force_mprotect_guards = o.force_mprotect_guards,
                                    .max_actors = o.max_actors,
                                    .wanted_fds = o.wanted_fds,
                                    .blocking_threads = o.blocking_threads,
                                    .reduction_budget = o.reduction_budget,
                                    .compact_slots = o.compact_slots,
                                    .quiet = o.quiet,
                                    .busy_wait = o.busy_wait,
                                    .batch_sends = o.batch_sends}),
        state(o, runtime.workers()) {}
  node_options opts;
  rt::runtime runtime;
  detail::node_state state;
  bool ran = false;
};

node::node(const node_options& o) : impl_(std::make_unique<impl>(o)) {}

node::~node() {
  impl_->runtime.stop();
  detail::node_state* expected = &impl_->state;
  detail::g_node.compare_exchange_strong(expected, nullptr);
}

exit_reason node::run(std::function<void()> fn, const spawn_options& opts) {
  if (impl_->ran) throw std::logic_error("herd: node::run may be called once");
  impl_->ran = true;
  detail::node_state& st = impl_->state;
  detail::node_state* expected = nullptr;
  if (!detail::g_node.compare_exchange_strong(expected, &st))
    throw std::logic_error("herd: another node is running in this process");
  detail::g_prev_terminate = std::set_terminate(&detail::terminate_handler);
  impl_->runtime.start();

  detail::spawn_root(std::move(fn), opts);
  exit_reason root_reason;
  {
    rt::unique_lock g(st.m);
    while (!st.root_done) st.cv.wait(g.native());
    root_reason = st.root_reason;
  }

  st.draining.store(true, std::memory_order_relaxed);
  // Phase 1: `shutdown` to the processes that trap exits — supervisors, which
  // then stop their children in order (the others would be restarted if they
  // died first). Phase 2, after a third of shutdown_timeout or once no such
  // process is left: `shutdown` to everything. Phase 3, at two thirds:
  // `kill` to everything.
  auto start = std::chrono::steady_clock::now();
  auto deadline = start + impl_->opts.shutdown_timeout;
  auto phase2_at = start + impl_->opts.shutdown_timeout / 3;
  auto kill_at = start + impl_->opts.shutdown_timeout * 2 / 3;
  std::vector<pid> signalled;
  auto signal_all = [&] {
    auto now_t = std::chrono::steady_clock::now();
    bool kill = now_t >= kill_at;
    std::vector<pid> trapping, all;
    {
      rt::foreign_read_guard g;
      st.table.for_each([&](detail::process* p) {
        all.push_back(p->id);
        if (p->trap_exit.load(std::memory_order_relaxed)) trapping.push_back(p->id);
      });
    }
    const std::vector<pid>& targets = (kill || now_t >= phase2_at || trapping.empty()) ? all : trapping;
    for (pid p : targets)
      if (kill || !std::binary_search(signalled.begin(), signalled.end(), p))
        herd::exit(p, kill ? exit_reason::kill() : exit_reason::shutdown());
    signalled.insert(signalled.end(), targets.begin(), targets.end());
    std::sort(signalled.begin(), signalled.end());
    signalled.erase(std::unique(signalled.begin(), signalled.end()), signalled.end());
  };
  {
    rt::unique_lock g(st.m);
    while (st.live() > 0) {
      g.unlock();
      signal_all();  // shutdown once to each new target; kill to all past two thirds
      g.lock();
      if (st.live() == 0) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        std::fprintf(stderr, "herd: node shutdown: %zu process(es) did not exit within %lld ms:\n",
                     st.live(), static_cast<long long>(impl_->opts.shutdown_timeout.count()));
        rt::foreign_read_guard rg;
        st.table.for_each([](detail::process* p) {
          char buf[256];
          p->ops->describe(p, buf, sizeof buf);
          std::fprintf(stderr, "  %s (did not reach a blocking point since the signal)\n", buf);
        });
        std::abort();
      }
      st.cv.wait_for(g.native(), std::chrono::milliseconds(10));
    }
  }
  impl_->runtime.stop();
  std::set_terminate(detail::g_prev_terminate);
  detail::g_node.store(nullptr, std::memory_order_release);
  return root_reason;
}

node_stats node::stats() const noexcept {
  const detail::node_state& st = impl_->state;
  node_stats s;
  for (unsigned i = 0; i <= st.workers; ++i) {
    s.spawned += st.per_thread[i].spawned.load(std::memory_order_relaxed);
    s.exited += st.per_thread[i].exited.load(std::memory_order_relaxed);
  }
  s.live_processes = s.spawned > s.exited ? s.spawned - s.exited : 0;
  s.max_actors = st.table.capacity();
  return s;
}

node_stats current_node_stats() noexcept {
  node_stats s;
  detail::node_state* st = detail::current_node();
  if (!st) return s;
  for (unsigned i = 0; i <= st->workers; ++i) {
    s.spawned += st->per_thread[i].spawned.load(std::memory_order_relaxed);
    s.exited += st->per_thread[i].exited.load(std::memory_order_relaxed);
  }
  s.live_processes = s.spawned > s.exited ? s.spawned - s.exited : 0;
  s.max_actors = st->table.capacity();
  return s;
}

rt::runtime& node::runtime() noexcept { return impl_->runtime; }

std::ptrdiff_t node::live_messages() noexcept { return detail::live_messages_total(); }

}  // namespace herd
