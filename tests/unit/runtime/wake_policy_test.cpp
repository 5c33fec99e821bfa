// The wake-up policy of a worker that dispatches I/O readiness (issue 19): the
// fiber a readiness event makes runnable is run by the worker that polled,
// without waking a parked sibling for it; when one dispatch makes more than
// one fiber runnable, a sibling is woken for the rest, so none is stranded
// behind a fiber that runs long. Raw runtime fibers; assertions are on the
// runtime's metrics and on counters, polled until they hold, never on timing.
#include <herd/runtime/io.hpp>
#include <herd/runtime/runtime.hpp>
#include <herd/runtime/sched.hpp>

#include <catch2/catch.hpp>

#include "raw_task.hpp"

#include "support/scale.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

using namespace herd::rt;

namespace {

using namespace herd_test_raw;

uint64_t total_parks(runtime& r) {
  uint64_t n = 0;
  for (const worker_metrics& w : r.metrics().workers) n += w.parks;
  return n;
}

// One fiber per eventfd: it waits for readiness, counts a turn, waits again.
struct waiter_scene {
  int efd = -1;
  fiber* waiter = nullptr;
  std::atomic<bool> fired{false};
  std::atomic<bool> waiting{false};
  std::atomic<uint64_t> turns{0};
  std::atomic<bool> stop{false};
};

struct waiter_source : io_source {
  waiter_scene* s = nullptr;
};

void on_waiter_ready(io_source* src, uint32_t) noexcept {
  waiter_scene* s = static_cast<waiter_source*>(src)->s;
  s->fired.store(true, std::memory_order_release);
  wake(s->waiter);  // on the worker that polled: onto its own ring
}

void waiter_body(task* t) {
  auto* s = static_cast<waiter_scene*>(t->arg);
  for (;;) {
    s->waiting.store(true, std::memory_order_release);
    while (!s->fired.load(std::memory_order_acquire)) park();
    s->fired.store(false, std::memory_order_relaxed);
    uint64_t v;
    while (read(s->efd, &v, sizeof v) > 0) {
    }
    if (s->stop.load(std::memory_order_acquire)) return;
    s->turns.fetch_add(1, std::memory_order_release);
  }
}

}  // namespace

// Before issue 19 the worker in epoll_wait queued the fiber on its ring and,
// seeing the other worker parked and nobody searching, woke it: two parks per
// event (the woken worker found nothing, or stole the fiber) instead of one.
TEST_CASE("a readiness event that makes one fiber runnable does not wake a parked sibling", "[sched][wake]") {
  runtime r(quiet_options(2));
  r.start();
  waiter_scene s;
  s.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  REQUIRE(s.efd >= 0);
  waiter_source src;
  src.s = &s;
  src.on_ready = &on_waiter_ready;
  REQUIRE(io_register(s.efd, &src, EPOLLIN) == 0);
  task waiter;
  s.waiter = &waiter;
  launch(waiter, &waiter_body, &s);
  REQUIRE(eventually([&] { return s.waiting.load(); }));

  const uint64_t events = herd::test::scaled(400, 150);
  const uint64_t parks_before = total_parks(r);
  const uint64_t one = 1;
  for (uint64_t i = 1; i <= events; ++i) {
    REQUIRE(write(s.efd, &one, sizeof one) == sizeof one);
    REQUIRE(eventually([&] { return s.turns.load(std::memory_order_acquire) >= i; }));
  }
  const uint64_t parks = total_parks(r) - parks_before;
  INFO(events << " events, " << parks << " parks over both workers");
  // One park per event for the worker that polls (it ran the fiber), plus a
  // few for timers and stack trims; waking the sibling per event made it two.
  CHECK(parks < events + events / 4);

  s.stop.store(true, std::memory_order_release);
  REQUIRE(write(s.efd, &one, sizeof one) == sizeof one);
  CHECK(eventually([&] { return waiter.done.load(std::memory_order_acquire); }));
  CHECK(io_deregister(s.efd) == 0);
  close(s.efd);
  r.stop();
}

namespace {

// Two fibers made runnable by one readiness event: the first to run spins
// until the second has run, so the second must be run by the other worker.
struct pair_scene {
  fiber* a = nullptr;
  fiber* b = nullptr;
  std::atomic<bool> fired{false};
  std::atomic<int> waiting{0};
  std::atomic<bool> b_ran{false};
  std::atomic<bool> a_ran{false};
};

struct pair_source : io_source {
  pair_scene* s = nullptr;
};

void on_pair_ready(io_source* src, uint32_t) noexcept {
  pair_scene* s = static_cast<pair_source*>(src)->s;
  s->fired.store(true, std::memory_order_release);
  wake(s->a);
  wake(s->b);
}

void pair_body(task* t) {
  auto* s = static_cast<pair_scene*>(t->arg);
  s->waiting.fetch_add(1, std::memory_order_release);
  while (!s->fired.load(std::memory_order_acquire)) park();
  if (t == s->a) {
    s->a_ran.store(true, std::memory_order_release);
    // Whichever of the two runs first waits for the other without yielding.
    while (!s->b_ran.load(std::memory_order_acquire)) {
    }
  } else {
    s->b_ran.store(true, std::memory_order_release);
    while (!s->a_ran.load(std::memory_order_acquire)) {
    }
  }
}

}  // namespace

TEST_CASE("a readiness dispatch that makes two fibers runnable gets both run at once, on both workers", "[sched][wake]") {
  runtime r(quiet_options(2));
  r.start();
  pair_scene s;
  int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  REQUIRE(efd >= 0);
  pair_source src;
  src.s = &s;
  src.on_ready = &on_pair_ready;
  REQUIRE(io_register(efd, &src, EPOLLIN) == 0);
  task a, b;
  s.a = &a;
  s.b = &b;
  launch(a, &pair_body, &s);
  launch(b, &pair_body, &s);
  REQUIRE(eventually([&] { return s.waiting.load() == 2; }));
  // Let both workers park (one in epoll_wait): their park counts settle.
  REQUIRE(eventually([&] {
    const runtime_metrics m = r.metrics();
    return m.workers[0].running == nullptr && m.workers[1].running == nullptr;
  }));
  const uint64_t one = 1;
  REQUIRE(write(efd, &one, sizeof one) == sizeof one);
  // Each spins until the other has run: both finish only if the worker that
  // polled got its sibling to take the second one.
  CHECK(eventually([&] { return a.done.load(std::memory_order_acquire) && b.done.load(std::memory_order_acquire); }));
  CHECK(io_deregister(efd) == 0);
  close(efd);
  r.stop();
}
