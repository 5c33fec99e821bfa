// Wiring: builds the shared parts, starts and stops the worker threads.
// Stop order: (1) `stopping` is set and every worker unparked; a worker leaves
// its loop only when it finds no runnable fiber, so fibers already runnable
// finish their slice; (2) the threads are joined; (3) the blocking pool is
// joined — a pool thread may still be waking a fiber whose job it finished;
// (4) callback timers are dropped, so their arguments (messages) are freed;
// (5) everything retired is freed — no thread can hold a pointer any more;
// (6) the stack arenas go with the impl.
#include <herd/runtime/sanitizers.hpp>
#include <herd/runtime/runtime.hpp>

#include "context/overflow_handler.hpp"
#include "runtime_impl.hpp"
#include "startup_checks.hpp"
#include "time/clock_impl.hpp"

#include <herd/runtime/clock.hpp>
#include <herd/runtime/sched.hpp>

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

namespace herd::rt {
namespace {

std::atomic<runtime_impl*> g_runtime{nullptr};

#if HERD_ASAN
constexpr std::size_t sanitizer_stack_factor = 4;
constexpr std::size_t sanitizer_guard_pages = 16;
#else
constexpr std::size_t sanitizer_stack_factor = 1;
constexpr std::size_t sanitizer_guard_pages = 1;
#endif

runtime_options normalized(runtime_options o) {
  if (o.busy_wait.count() < 0 || o.busy_wait > max_busy_wait)
    throw std::invalid_argument("herd: busy_wait must be from 0 to " + std::to_string(max_busy_wait.count()) +
                                " us, not " + std::to_string(o.busy_wait.count()) + " us");
  if (o.compact_slots > 4096)
    throw std::invalid_argument("herd: compact_slots must be from 0 (8 per worker) to 4096, not " +
                                std::to_string(o.compact_slots));
  if (o.deterministic) o.busy_wait = std::chrono::microseconds{0};
  if (o.deterministic) o.workers = 1;
  if (o.workers == 0) o.workers = std::max(1u, std::thread::hardware_concurrency());
  if (o.compact_slots == 0) o.compact_slots = 8 * o.workers;
  if (o.stack_size == 0) o.stack_size = 64 * 1024;
  o.stack_size *= sanitizer_stack_factor;
  if (o.guard_size == 0) o.guard_size = 4096 * sanitizer_guard_pages;
  if (o.reduction_budget == 0) o.reduction_budget = 1;
  if (const char* env = std::getenv("HERD_BATCH_SENDS")) {
    if (std::strcmp(env, "0") != 0 && std::strcmp(env, "1") != 0)
      throw std::invalid_argument(std::string("herd: HERD_BATCH_SENDS must be 0 (one send(2) each) or 1, not '") + env +
                                  "'");
    if (env[0] == '0') o.batch_sends = false;
  }
  return o;
}

stack_options stack_opts(const runtime_options& o) {
  stack_options s;
  s.default_size = o.stack_size;
  s.guard_size = o.guard_size;
  if (o.force_mprotect_guards) s.guard = guard_kind::mprotect;
  return s;
}

// A node never dies of a peer or a log reader going away: a write to a
// closed socket or pipe (stdout piped to `head`, a restarted log collector)
// returns EPIPE instead of raising SIGPIPE, whose default ends the process —
// as the BEAM ignores it. A handler the program installed is left alone.
void ignore_sigpipe() noexcept {
  struct sigaction old {};
  if (sigaction(SIGPIPE, nullptr, &old) != 0) return;
  if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) return;
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGPIPE, &ign, nullptr);
}

}  // namespace

extern worker* raw_this_worker_for_signal() noexcept;

namespace {
std::size_t describe_running(char* buf, std::size_t cap) noexcept {
  worker* w = raw_this_worker_for_signal();
  fiber* f = w ? w->side.current : nullptr;
  if (!f || !f->ops || !f->ops->describe) return 0;
  return f->ops->describe(f, buf, cap);
}
}  // namespace

runtime_impl* current_runtime() noexcept { return g_runtime.load(std::memory_order_acquire); }

runtime_impl::runtime_impl(const runtime_options& o)
    : opts(normalized(o)),
      n_workers(opts.workers),
      stacks(stack_opts(opts)),
      foreign_stacks(stacks),
      idle_state(n_workers),
      reclaim(n_workers, &io),
      blocking(opts.blocking_threads) {
  auto on_pool = [](void* pool, void (*job)(void*), void* arg) {
    static_cast<blocking_pool*>(pool)->submit_task(job, arg);
  };
  stacks.set_background(on_pool, &blocking);
  compact.frames.set_background(on_pool, &blocking);
}

void runtime_impl::notify_parked(int except) noexcept {
  int w = idle_state.worker_to_notify(except);
  if (w >= 0) workers[static_cast<unsigned>(w)]->park_token.unpark(io);
}

void runtime_impl::record_long_schedule(const fiber* f, uint64_t ms) {
  lock_guard<mutex> g(long_m);
  longs.push_back({now_ms(), ms, f});
  if (longs.size() > 64) longs.pop_front();
}

runtime::runtime(const runtime_options& o) : impl_(std::make_unique<impl>(o)) {
  limits_report r = check_limits(impl_->opts.max_actors, impl_->stacks.guard(), impl_->opts.wanted_fds);
  impl_->warnings = r.warnings;
  impl_->warnings.insert(impl_->warnings.end(), r.errors.begin(), r.errors.end());
  if (!impl_->opts.quiet)
    for (auto& w : impl_->warnings) std::fprintf(stderr, "%s\n", w.c_str());
}

runtime::~runtime() { stop(); }

void runtime::start() {
  runtime_impl* expected = nullptr;
  if (!g_runtime.compare_exchange_strong(expected, impl_.get(), std::memory_order_acq_rel))
    throw std::logic_error("herd: another runtime is already running in this process");
  impl& r = *impl_;
  clock_impl::start(r.opts.deterministic);
  r.started_ms = now_ms();
  ignore_sigpipe();
  install_overflow_handler(&r.stacks);
  set_overflow_describer(&describe_running);
  r.blocking.complete = [](blocking_job* job) noexcept {
    auto* f = static_cast<fiber*>(job->fiber);
    runtime_impl* rt = current_runtime();
    // The fiber may see `done` (a spurious wake-up), finish and be retired
    // before wake() below returns: stay a registered reader until then.
    rt->reclaim.enter_foreign();
    job->done.store(true, std::memory_order_release);
    if (f) wake(f);
    rt->reclaim.leave_foreign();
  };
  for (unsigned i = 0; i < r.n_workers; ++i) r.workers.push_back(std::make_unique<worker>(r, i));
  for (unsigned i = 0; i < r.n_workers; ++i)
    r.threads.emplace_back([w = r.workers[i].get()] {
      // Named for top -H, gdb and perf; tests find the workers by it.
      pthread_setname_np(pthread_self(), ("herd-w" + std::to_string(w->id)).c_str());
      w->thread_main();
    });
  r.mon.start();
}

void runtime::stop() {
  impl& r = *impl_;
  if (r.threads.empty()) return;
  r.mon.stop();
  r.stopping.store(true, std::memory_order_release);
  for (auto& w : r.workers) w->park_token.unpark(r.io);
  for (auto& t : r.threads) t.join();
  r.threads.clear();
  r.blocking.shutdown();
  for (auto& w : r.workers) w->timers.clear();
  // No new foreign reader from here on (foreign_read_guard re-checks after
  // entering), and the ones inside finish before anything is freed: a
  // foreign thread's send that ended the node may still be in its guard.
  g_runtime.store(nullptr, std::memory_order_seq_cst);
  while (r.reclaim.foreign_readers() > 0) std::this_thread::yield();
  r.reclaim.reclaim_all();
  set_overflow_describer(nullptr);
}

unsigned runtime::workers() const noexcept { return impl_->n_workers; }

const std::vector<std::string>& runtime::startup_warnings() const noexcept { return impl_->warnings; }


namespace {
runtime_metrics metrics_of(const runtime_impl& r) {
  runtime_metrics m;
  const uint64_t per_ms = clock_impl::tsc_per_ms();
  for (auto& w : r.workers) {
    worker_metrics x;
    x.switches = w->switches.load(std::memory_order_relaxed);
    x.steals = w->steals.load(std::memory_order_relaxed);
    x.stolen = w->stolen.load(std::memory_order_relaxed);
    x.parks = w->parks.load(std::memory_order_relaxed);
    x.spins = w->spins.load(std::memory_order_relaxed);
    x.sends_batched = w->sends_batched.load(std::memory_order_relaxed);
    x.send_flushes = w->send_flushes.load(std::memory_order_relaxed);
    // A park in progress counts up to now (parked_tsc grows only when it ends):
    // a worker parked for seconds is idle, not busy.
    uint64_t parked = w->parked_tsc.load(std::memory_order_relaxed);
    if (uint64_t since = w->parked_since_tsc.load(std::memory_order_relaxed)) {
      uint64_t now_tsc = clock_impl::tsc();
      if (now_tsc > since) parked += now_tsc - since;
    }
    uint64_t parked_ns = parked * 1000000 / per_ms;
    uint64_t up_ns = (now_ms() - r.started_ms) * 1000000;
    x.busy_ns = up_ns > parked_ns ? up_ns - parked_ns : 0;
    x.run_queue = w->queued_approx() + (w->run_next.occupied() ? 1 : 0);
    x.timers = w->timers.size();
    x.running = w->running.load(std::memory_order_relaxed);
    m.workers.push_back(x);
  }
  {
    lock_guard<mutex> g(const_cast<runtime_impl&>(r).long_m);
    m.long_schedules.assign(r.longs.begin(), r.longs.end());
  }
  m.polls = r.io.polls();
  stack_allocator_stats ss = r.stacks.stats();
  m.stacks_in_use = ss.slots_in_use;
  m.stacks_carved = ss.slots_carved;
  m.stacks_trimmed = ss.slots_trimmed;
  m.uptime_ms = now_ms() - r.started_ms;
  m.guard = to_string(r.stacks.guard());
  compact_stacks::totals ct = r.compact.sum();
  m.compact_slots = r.compact.count();
  m.compact_runs = ct.runs;
  m.compact_waits = ct.waits;
  return m;
}
}  // namespace

runtime_metrics runtime::metrics() const { return metrics_of(*impl_); }

void set_busy_wait_floor(std::chrono::microseconds floor) noexcept {
  runtime_impl* r = current_runtime();
  if (!r || r->opts.deterministic) return;
  floor = std::clamp(floor, std::chrono::microseconds{0}, max_busy_wait);
  r->busy_wait_floor_tsc.store(static_cast<uint64_t>(floor.count()) * clock_impl::tsc_per_ms() / 1000,
                               std::memory_order_relaxed);
}

bool current_metrics(runtime_metrics& out) {
  runtime_impl* r = current_runtime();
  if (!r) return false;
  out = metrics_of(*r);
  return true;
}

}  // namespace herd::rt
