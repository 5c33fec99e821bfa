// Work queued on one worker reaches a parked one: the parked worker is woken
// and steals. Raw runtime fibers (no actors layer); assertions are on the
// runtime's per-worker metrics, polled until they hold, never on timing.
#include <herd/runtime/io.hpp>
#include <herd/runtime/runtime.hpp>
#include <herd/runtime/sched.hpp>

#include <catch2/catch.hpp>

#include "raw_task.hpp"

#include <dirent.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace herd::rt;

namespace {

using namespace herd_test_raw;

// The scheduling state letter (R, S, D, ...) of this process's thread named
// `name`, from /proc/self/task/<tid>/stat; 0 if there is none.
char thread_state(const std::string& name) {
  char state = 0;
  DIR* d = opendir("/proc/self/task");
  if (!d) return 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::string base = std::string("/proc/self/task/") + e->d_name;
    char comm[64] = {};
    if (FILE* f = std::fopen((base + "/comm").c_str(), "r")) {
      if (!std::fgets(comm, sizeof comm, f)) comm[0] = 0;
      std::fclose(f);
    }
    if (name + "\n" != comm) continue;
    if (FILE* f = std::fopen((base + "/stat").c_str(), "r")) {
      char buf[512] = {};
      const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
      std::fclose(f);
      buf[n] = 0;
      if (const char* p = std::strrchr(buf, ')'); p && p[1] == ' ') state = p[2];
    }
  }
  closedir(d);
  return state;
}

struct scene {
  std::atomic<bool> release_spinner{false};
  std::atomic<uint32_t> spinner_worker{UINT32_MAX};
  std::atomic<bool> fired{false};      // the eventfd's readiness arrived
  std::atomic<bool> publisher_waits{false};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> started{0};
  std::atomic<uint64_t> runs_on[2] = {0, 0};
  fiber* publisher = nullptr;
  std::vector<std::unique_ptr<task>> subscribers;
};

struct fd_source : io_source {
  scene* s = nullptr;
};

void on_ready(io_source* src, uint32_t) noexcept {
  scene* s = static_cast<fd_source*>(src)->s;
  s->fired.store(true, std::memory_order_release);
  wake(s->publisher);  // on the worker that polled: onto its own ring
}

void spinner_body(task* t) {
  auto* s = static_cast<scene*>(t->arg);
  s->spinner_worker.store(worker_index(), std::memory_order_release);
  while (!s->release_spinner.load(std::memory_order_acquire)) {
  }
}

void subscriber_body(task* t) {
  auto* s = static_cast<scene*>(t->arg);
  s->started.fetch_add(1, std::memory_order_relaxed);
  while (!s->stop.load(std::memory_order_acquire)) {
    uint32_t w = worker_index();
    s->runs_on[w].fetch_add(1, std::memory_order_relaxed);
    // Some work per turn, then back to the ring's tail: the ring stays full.
    volatile uint64_t x = w;
    for (int i = 0; i < 2000; ++i) x = x * 6364136223846793005ull + 1;
    yield();
  }
}

void publisher_body(task* t) {
  auto* s = static_cast<scene*>(t->arg);
  s->publisher_waits.store(true, std::memory_order_release);
  while (!s->fired.load(std::memory_order_acquire)) park();
  for (auto& sub : s->subscribers) launch(*sub, &subscriber_body, s);
}

}  // namespace

// The chat fan-out of issue 13: the worker holding the poller wakes from epoll
// and the wake it dispatches lands on its own ring. It used to "notify" itself
// (it was still on the sleepers' list) and so count as a searcher for as long
// as its ring never ran dry; the other worker, parking meanwhile, could not
// search and nobody woke it: one core ran everything, the other stayed parked
// (0 steals) until the fan-out ended.
TEST_CASE("a worker whose ring has runnable work wakes a parked worker, which steals", "[sched][wake]") {
  runtime r(quiet_options(2));
  r.start();
  scene s;
  for (int i = 0; i < 64; ++i) s.subscribers.push_back(std::make_unique<task>());

  // Worker X runs a spinner (no polls, no parks); worker Y ends up alone in
  // epoll_wait, holding the poller, with the publisher parked.
  int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  REQUIRE(efd >= 0);
  fd_source src;
  src.s = &s;
  src.on_ready = &on_ready;
  REQUIRE(io_register(efd, &src, EPOLLIN) == 0);
  task spinner, publisher;
  s.publisher = &publisher;
  launch(spinner, &spinner_body, &s);
  REQUIRE(eventually([&] { return s.spinner_worker.load() != UINT32_MAX; }));
  const uint32_t x = s.spinner_worker.load(), y = 1 - x;
  launch(publisher, &publisher_body, &s);
  REQUIRE(eventually([&] { return s.publisher_waits.load(); }));
  // Y parks once it has nothing left (in epoll_wait: it holds the poller, as
  // X never polls). Its park count moves only when it wakes, so look at its
  // thread: asleep, twice in a row.
  const std::string y_name = "herd-w" + std::to_string(y);
  REQUIRE(eventually([&] { return thread_state(y_name) == 'S' && thread_state(y_name) == 'S'; }));
  const uint64_t one = 1;
  REQUIRE(write(efd, &one, sizeof one) == sizeof one);

  // Y runs the publisher and then the subscribers, which keep its ring full.
  REQUIRE(eventually([&] { return s.started.load() == s.subscribers.size() && s.runs_on[y].load() > 0; }));
  const worker_metrics before = r.metrics().workers[x];
  s.release_spinner.store(true, std::memory_order_release);
  // X, now idle, must be woken (or find the work itself) and steal from Y.
  const bool stole = eventually([&] {
    const worker_metrics now = r.metrics().workers[x];
    return now.steals > before.steals && s.runs_on[x].load() > 0;
  });
  const runtime_metrics m = r.metrics();
  INFO("worker X=" << x << ": steals " << before.steals << " -> " << m.workers[x].steals << ", parks "
                   << before.parks << " -> " << m.workers[x].parks << ", subscriber turns on X "
                   << s.runs_on[x].load() << ", on Y " << s.runs_on[y].load() << ", Y's run queue "
                   << m.workers[y].run_queue);
  CHECK(stole);

  s.stop.store(true, std::memory_order_release);
  CHECK(eventually([&] {
    for (auto& sub : s.subscribers)
      if (!sub->done.load(std::memory_order_acquire)) return false;
    return spinner.done.load(std::memory_order_acquire) && publisher.done.load(std::memory_order_acquire);
  }));
  CHECK(io_deregister(efd) == 0);
  close(efd);
  r.stop();
}

namespace {
std::atomic<bool> idle_spin_release{false};
void idle_spin_body(task*) {
  while (!idle_spin_release.load(std::memory_order_acquire)) {
  }
}
}  // namespace

// The monitor stops ticking once every worker has stayed parked for 20 ms,
// and is woken only by the first worker to wake after that (monitor.cpp). A
// fiber that then runs without yielding must still be seen: it spins until
// the monitor has recorded its slice (it would spin to the 20 s limit if the
// monitor were never woken).
TEST_CASE("after the node idles long enough for the monitor to sleep, a fiber that never yields is still recorded as a long schedule") {
  runtime r(quiet_options(1));
  r.start();
  const std::size_t before = r.metrics().long_schedules.size();
  // The duration under test: idle well past the monitor's 20 ms before it sleeps.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  task spinner;
  idle_spin_release.store(false);
  launch(spinner, &idle_spin_body, nullptr);
  const bool seen = eventually([&] { return r.metrics().long_schedules.size() > before; });
  idle_spin_release.store(true, std::memory_order_release);
  CHECK(seen);
  CHECK(eventually([&] { return spinner.done.load(std::memory_order_acquire); }));
  r.stop();
}
