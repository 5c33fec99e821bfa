#include "sched/monitor.hpp"

#include "runtime_impl.hpp"

#include <herd/runtime/clock.hpp>

#include <pthread.h>

#include <chrono>

namespace herd::rt {

void monitor::start() {
  th_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "herd-monitor");
    loop();
  });
}

void monitor::stop() {
  if (!th_.joinable()) return;
  {
    lock_guard<mutex> g(m_);
    stop_ = true;
  }
  cv_.notify_all();
  th_.join();
}

void monitor::note_parking(int delta) noexcept {
  // Only a monitor in its deep sleep needs waking. Waking it on every
  // transition out of "all parked" cost a futex wake and a context switch
  // per epoll return on a one-worker node serving sparse requests (a push
  // gateway at 2,000 pushes/s: 0.8-1.4 futex calls and ~40 us of CPU per
  // push). Dekker with seq_cst on both sides: the worker's decrement then
  // its load of deep_, the monitor's store of deep_ then its load of
  // parked_ — one of the two sees the other's write, so the monitor never
  // sleeps while a worker runs unseen. The notify takes the mutex so it
  // cannot fall between the monitor's check and its wait.
  int before = parked_.fetch_add(delta, std::memory_order_seq_cst);
  if (delta < 0 && before == static_cast<int>(rt_.n_workers) && deep_.load(std::memory_order_seq_cst)) {
    lock_guard<mutex> g(m_);
    cv_.notify_one();
  }
}

void monitor::loop() {
  const unsigned n = rt_.n_workers;
  std::vector<uint64_t> last_switches(n, 0);
  std::vector<const fiber*> last_fiber(n, nullptr);
  std::vector<uint32_t> stuck_ms(n, 0);
  std::vector<bool> reported(n, false);
  constexpr uint32_t period_ms = 10;
  constexpr uint32_t deep_after_ms = 20;  // two quiet ticks
  uint32_t quiet_ms = 0;  // every worker parked and nothing run, this long
  unique_lock g(m_);
  while (!stop_) {
    if (quiet_ms >= deep_after_ms) {
      deep_.store(true, std::memory_order_seq_cst);
      while (!stop_ && parked_.load(std::memory_order_seq_cst) >= static_cast<int>(n)) cv_.wait(g.native());
      deep_.store(false, std::memory_order_relaxed);
      quiet_ms = 0;
      continue;
    }
    cv_.wait_for(g.native(), std::chrono::milliseconds(period_ms));
    if (stop_) break;
    bool ran = false;
    for (unsigned i = 0; i < n; ++i) {
      worker& w = *rt_.workers[i];
      uint64_t sw = w.switches.load(std::memory_order_relaxed);
      const fiber* f = w.running.load(std::memory_order_relaxed);
      if (f && f == last_fiber[i] && sw == last_switches[i]) {
        stuck_ms[i] += period_ms;
        w.stuck.store(true, std::memory_order_relaxed);
        // Work waiting behind the stuck fiber (its run next, its ring, its
        // due timers) is for another worker now: wake one to go and take it.
        // So is the I/O when nobody holds the poller: a worker that parked
        // while the stuck one held the token for a non-blocking poll sleeps
        // on its futex without a timeout, and readiness would wait for the
        // stuck fiber to yield (busy_wait_test's hog, 4 runs in 150 under
        // TSan). Woken, it polls and parks in epoll_wait with the token.
        if (w.run_next.occupied() || !w.ring.empty_approx() ||
            w.timers.earliest() <= now_ms() || (rt_.io.has_sources() && !rt_.io.held()))
          rt_.notify_parked();
        if (!reported[i] && stuck_ms[i] >= rt_.opts.long_schedule_ms) {
          reported[i] = true;
          rt_.record_long_schedule(f, stuck_ms[i]);
        }
      } else {
        if (stuck_ms[i]) w.stuck.store(false, std::memory_order_relaxed);
        stuck_ms[i] = 0;
        reported[i] = false;
        // testing::open_run_next: a worker that parked without spinning (it
        // was not a searcher) is woken to go and steal, as for a stuck one.
        if (w.open_to_thieves() && w.run_next.occupied()) rt_.notify_parked();
      }
      if (sw != last_switches[i]) ran = true;
      last_switches[i] = sw;
      last_fiber[i] = f;
    }
    quiet_ms = !ran && parked_.load(std::memory_order_seq_cst) >= static_cast<int>(n) ? quiet_ms + period_ms : 0;
  }
}

}  // namespace herd::rt
