// runtime_options::busy_wait (issue 18): a worker that ran dry spins before it
// parks. What the spin must not lose: a wake-up from a foreign thread, a
// timer armed from a foreign thread on the spinner's wheel, I/O readiness —
// each round below wakes a fiber while its worker spins or after it parked
// (whichever the machine's timing gives; both must work). And stop() must not
// hang on spinning workers. Assertions are on completion and on metrics,
// never on timing.
#include <herd/runtime/clock.hpp>
#include <herd/runtime/io.hpp>
#include <herd/runtime/runtime.hpp>
#include <herd/runtime/sched.hpp>
#include <herd/runtime/timer.hpp>

#include <catch2/catch.hpp>

#include "raw_task.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <thread>

using namespace herd::rt;
using namespace herd_test_raw;

namespace {

// The longest spin there is: a wake-up that follows the receiver's park within
// 10 ms lands in the spin on any machine that is not stalled.
runtime_options spinning(unsigned workers) {
  runtime_options o;
  o.workers = workers;
  o.quiet = true;
  o.busy_wait = max_busy_wait;
  return o;
}

uint64_t total_spins(const runtime& r) {
  uint64_t n = 0;
  for (auto& w : r.metrics().workers) n += w.spins;
  return n;
}

// A fiber that waits for `asked` to move past what it acknowledged, then
// acknowledges it: each round is one wake-up by the test's thread (or by a
// timer or readiness the test arranged).
struct pinger {
  std::atomic<uint64_t> asked{0};
  std::atomic<uint64_t> acked{0};
  std::atomic<bool> quit{false};
  int efd = -1;  // the I/O round's eventfd, read (drained) by the fiber
  task t;
};

void pinger_body(task* t) {
  auto* p = static_cast<pinger*>(t->arg);
  for (;;) {
    uint64_t want = p->acked.load(std::memory_order_relaxed) + 1;
    while (p->asked.load(std::memory_order_acquire) < want && !p->quit.load(std::memory_order_acquire)) park();
    if (p->quit.load(std::memory_order_acquire)) return;
    if (p->efd >= 0) {
      uint64_t v;
      while (read(p->efd, &v, sizeof v) > 0) {
      }
    }
    p->acked.store(want, std::memory_order_release);
  }
}

void wake_pinger(void* arg) { wake(&static_cast<pinger*>(arg)->t); }
void drop_nothing(void*) {}

struct efd_source : io_source {
  pinger* p = nullptr;
};

void efd_ready(io_source* src, uint32_t) noexcept {
  pinger* p = static_cast<efd_source*>(src)->p;
  wake(&p->t);
}

constexpr int rounds = 200;

// n rounds: ask for round i, poke(i) makes the wake-up, wait for the ack.
template <class Poke>
void ask_rounds(pinger& p, int n, Poke poke) {
  for (int i = 1; i <= n; ++i) {
    p.asked.store(uint64_t(i), std::memory_order_release);
    poke(i);
    REQUIRE(eventually([&] { return p.acked.load(std::memory_order_acquire) == uint64_t(i); }));
  }
}

void finish(runtime& r, pinger& p) {
  p.quit.store(true, std::memory_order_release);
  wake(&p.t);
  REQUIRE(eventually([&] { return p.t.done.load(std::memory_order_acquire); }));
  r.stop();
}

runtime_options plain(unsigned workers) {
  runtime_options o;
  o.workers = workers;
  o.quiet = true;
  return o;
}

// A runtime of options o, started, `then()` run, 20 rounds of wake-ups from
// this thread: how many busy waits its workers began.
template <class F>
uint64_t spins_in_20_rounds(const runtime_options& o, F then) {
  runtime r(o);
  r.start();
  then();
  pinger p;
  launch(p.t, &pinger_body, &p);
  ask_rounds(p, 20, [&](int) { wake(&p.t); });
  finish(r, p);
  return total_spins(r);
}

}  // namespace

TEST_CASE("busy_wait: out of range values are refused with the range in the message", "[sched][busy_wait]") {
  runtime_options o;
  o.quiet = true;
  o.workers = 1;
  o.busy_wait = std::chrono::microseconds{-1};
  REQUIRE_THROWS_WITH(runtime(o), Catch::Contains("busy_wait must be from 0 to 10000 us") && Catch::Contains("-1 us"));
  o.busy_wait = max_busy_wait + std::chrono::microseconds{1};
  REQUIRE_THROWS_AS(runtime(o), std::invalid_argument);
  o.busy_wait = std::chrono::seconds{3600};
  REQUIRE_THROWS_AS(runtime(o), std::invalid_argument);
  o.busy_wait = max_busy_wait;
  REQUIRE_NOTHROW(runtime(o));
  o.busy_wait = std::chrono::microseconds{0};
  REQUIRE_NOTHROW(runtime(o));
}

TEST_CASE("busy_wait: off by default, a worker that ran dry never spins", "[sched][busy_wait]") {
  CHECK(spins_in_20_rounds(plain(2), [] {}) == 0);
}

TEST_CASE("busy_wait: a deterministic runtime never spins", "[sched][busy_wait]") {
  runtime_options o = spinning(1);
  o.deterministic = true;
  CHECK(spins_in_20_rounds(o, [] {}) == 0);
}

TEST_CASE("busy_wait: a wake-up from a plain thread reaches a spinning worker", "[sched][busy_wait]") {
  for (unsigned workers : {1u, 2u}) {
    CAPTURE(workers);
    runtime r(spinning(workers));
    r.start();
    pinger p;
    launch(p.t, &pinger_body, &p);
    ask_rounds(p, rounds, [&](int) { wake(&p.t); });
    CHECK(total_spins(r) > 0);  // the spin ran (and so the rounds above met it)
    finish(r, p);
  }
}

TEST_CASE("busy_wait: a timer armed from a plain thread fires on a spinning worker", "[sched][busy_wait]") {
  for (unsigned workers : {1u, 2u}) {
    CAPTURE(workers);
    runtime r(spinning(workers));
    r.start();
    pinger p;
    launch(p.t, &pinger_body, &p);
    timer_ref t;  // held until the round's ack, as the rounds go
    ask_rounds(p, rounds, [&](int i) {
      // On worker 0's wheel, due now or in 1 ms: the spinner (or the parked
      // worker it unparks) must fire it.
      t = schedule_timer(now_ms() + uint64_t(i % 2), &wake_pinger, &drop_nothing, &p);
    });
    CHECK(total_spins(r) > 0);
    finish(r, p);
  }
}

TEST_CASE("busy_wait: I/O readiness reaches a spinning worker", "[sched][busy_wait]") {
  for (unsigned workers : {1u, 2u}) {
    CAPTURE(workers);
    runtime r(spinning(workers));
    r.start();
    pinger p;
    p.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    REQUIRE(p.efd >= 0);
    efd_source src;
    src.p = &p;
    src.on_ready = &efd_ready;
    REQUIRE(io_register(p.efd, &src, EPOLLIN) == 0);
    launch(p.t, &pinger_body, &p);
    ask_rounds(p, rounds, [&](int) {
      const uint64_t one = 1;
      REQUIRE(write(p.efd, &one, sizeof one) == sizeof one);  // the only wake-up: readiness
    });
    CHECK(total_spins(r) > 0);
    REQUIRE(io_deregister(p.efd) == 0);
    finish(r, p);  // src outlives the grace period: stop() ends every poll
    close(p.efd);
  }
}

TEST_CASE("busy_wait: stop() returns while workers keep spinning and being woken", "[sched][busy_wait]") {
  runtime r(spinning(2));
  r.start();
  pinger p;
  launch(p.t, &pinger_body, &p);
  std::atomic<bool> stop_waker{false};
  // Keeps the workers cycling between running, spinning and (rarely) parking.
  std::thread waker([&] {
    uint64_t i = 0;
    while (!stop_waker.load(std::memory_order_acquire)) {
      p.asked.store(++i, std::memory_order_release);
      wake(&p.t);
      while (p.acked.load(std::memory_order_acquire) < i && !stop_waker.load(std::memory_order_acquire))
        std::this_thread::yield();
    }
  });
  REQUIRE(eventually([&] { return p.acked.load(std::memory_order_acquire) >= 50 && total_spins(r) > 0; }));
  stop_waker.store(true, std::memory_order_release);
  waker.join();
  finish(r, p);  // stop() with a worker that just ran dry and spins: returns
  SUCCEED("stopped");
}

namespace {
struct hog_state {
  std::atomic<bool> release{false};
  std::atomic<bool> running{false};
};
void hog_body(task* t) {
  auto* h = static_cast<hog_state*>(t->arg);
  h->running.store(true, std::memory_order_release);
  while (!h->release.load(std::memory_order_acquire)) {
  }
}
}  // namespace

// A worker that parks while another spins leaves the poller to the spinner;
// if the spinner then takes a fiber that never yields, the sleeper must still
// come back for the I/O (its futex sleep is capped), or readiness would wait
// for the hog to end. Each cycle: an I/O round leaves the worker that ran it
// spinning, a hog launched from this thread goes to whoever finds it first
// (often that spinner), then more I/O rounds must be served meanwhile.
TEST_CASE("busy_wait: I/O readiness is served while the other worker runs a fiber that never yields",
          "[sched][busy_wait]") {
  runtime r(spinning(2));
  r.start();
  pinger p;
  p.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  REQUIRE(p.efd >= 0);
  efd_source src;
  src.p = &p;
  src.on_ready = &efd_ready;
  REQUIRE(io_register(p.efd, &src, EPOLLIN) == 0);
  launch(p.t, &pinger_body, &p);
  uint64_t i = 0;
  auto io_round = [&] {
    p.asked.store(++i, std::memory_order_release);
    const uint64_t one = 1;
    REQUIRE(write(p.efd, &one, sizeof one) == sizeof one);
    REQUIRE(eventually([&] { return p.acked.load(std::memory_order_acquire) == i; }));
  };
  for (int cycle = 0; cycle < 30; ++cycle) {
    io_round();
    hog_state h;
    task hog;
    // A failed REQUIRE must not leave the hog running: stop() would wait on it.
    struct release_hog {
      hog_state& h;
      ~release_hog() { h.release.store(true, std::memory_order_release); }
    } guard{h};
    launch(hog, &hog_body, &h);
    REQUIRE(eventually([&] { return h.running.load(std::memory_order_acquire); }));
    for (int k = 0; k < 3; ++k) io_round();
    h.release.store(true, std::memory_order_release);
    REQUIRE(eventually([&] { return hog.done.load(std::memory_order_acquire); }));
  }
  REQUIRE(io_deregister(p.efd) == 0);
  finish(r, p);
  close(p.efd);
}

// set_busy_wait_floor (the distribution's while a node connection is up): the
// floor makes a runtime whose own busy_wait is 0 spin, and taking it away
// stops the spins. One worker, so that every spin after the reset begins
// after a round the test has seen end: the round's wake-up carries the reset
// to the worker (the test stores it before asking, the fiber loads the ask
// with acquire), and the worker reads the floor afresh each time it runs dry.
TEST_CASE("busy_wait: a floor set while running makes idle workers spin, and 0 stops them", "[sched][busy_wait]") {
  runtime r(plain(1));
  r.start();
  pinger p;
  launch(p.t, &pinger_body, &p);
  uint64_t round = 0;
  auto rounds_of = [&](int n) {
    for (int i = 0; i < n; ++i) {
      p.asked.store(++round, std::memory_order_release);
      wake(&p.t);
      REQUIRE(eventually([&] { return p.acked.load(std::memory_order_acquire) == round; }));
    }
  };
  rounds_of(20);
  CHECK(total_spins(r) == 0);
  set_busy_wait_floor(max_busy_wait);
  rounds_of(rounds);
  CHECK(total_spins(r) > 0);
  set_busy_wait_floor(std::chrono::microseconds{0});
  rounds_of(1);  // a spin begun before the reset has begun by the end of this round
  const uint64_t after_reset = total_spins(r);
  rounds_of(20);
  CHECK(total_spins(r) == after_reset);
  finish(r, p);
}

TEST_CASE("busy_wait: a deterministic runtime ignores the floor, and a new runtime starts without it",
          "[sched][busy_wait]") {
  runtime_options det = plain(1);
  det.deterministic = true;
  CHECK(spins_in_20_rounds(det, [] { set_busy_wait_floor(max_busy_wait); }) == 0);
  {
    runtime r(plain(1));
    r.start();
    set_busy_wait_floor(max_busy_wait);
    r.stop();
  }
  set_busy_wait_floor(max_busy_wait);  // no runtime runs: a no-op
  CHECK(spins_in_20_rounds(plain(2), [] {}) == 0);
}
