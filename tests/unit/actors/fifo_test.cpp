// Per-pair FIFO: messages from one sender to one receiver arrive in the order
// sent, whatever workers the two run on and however they migrate.
#include <herd/actors.hpp>
#include <herd/runtime/sched.hpp>
#include <herd/runtime/testing.hpp>

#include <catch2/catch.hpp>

#include "support/node_fixture.hpp"
#include "support/scale.hpp"

#include <atomic>
#include <bit>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using herd::test::run_node;

namespace fifo_test_msgs {
struct go {};
struct seq { uint32_t sender; uint32_t n; };
struct done { uint32_t sender; };
}  // namespace fifo_test_msgs

using namespace fifo_test_msgs;

namespace {
// Senders wait for `go`; odd ones then move to another worker than the one
// they woke on (rt::testing::migrate), so senders really run on several
// workers at once. Each sends `per_sender` numbered messages to the root,
// yielding now and then (the workers' queues shuffle them around); with
// `migrate_midway` they also move to another worker halfway through, and the
// receiver moves now and then.
struct fifo_result {
  uint64_t total = 0, out_of_order = 0;
  std::vector<uint32_t> next;
  uint32_t worker_mask = 0;
};

fifo_result run_fifo(unsigned workers, uint32_t senders, uint32_t per_sender, bool migrate_midway) {
  fifo_result res;
  res.next.assign(senders, 0);
  std::atomic<uint32_t> worker_mask{0};
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    std::vector<herd::pid> pids;
    auto sender = [me, per_sender, migrate_midway, &worker_mask](uint32_t s) {
      herd::receive([](go) {});
      if (s % 2) herd::rt::testing::migrate();
      for (uint32_t i = 0; i < per_sender; ++i) {
        if (i % 64 == 0) worker_mask.fetch_or(1u << (herd::rt::worker_index() & 31));
        if (i % 512 == 511) herd::yield();
        if (migrate_midway && i == per_sender / 2) herd::rt::testing::migrate();
        herd::send(me, seq{s, i});
      }
      herd::send(me, done{s});
    };
    // Half are spawned here (they start on this worker), half from a foreign
    // thread (they start wherever the injection queue sends them).
    for (uint32_t s = 0; s < senders / 2; ++s) pids.push_back(herd::spawn(sender, s));
    herd::blocking([&] {
      std::thread t([&] {
        for (uint32_t s = senders / 2; s < senders; ++s) pids.push_back(herd::spawn(sender, s));
      });
      t.join();
    });
    for (herd::pid p : pids) herd::send(p, go{});
    uint64_t dones = 0;
    while (dones < senders) {
      herd::receive(
          [&](seq m) {
            if (m.n != res.next[m.sender]) ++res.out_of_order;
            res.next[m.sender] = m.n + 1;
            ++res.total;
            if (migrate_midway && res.total % 20000 == 0) herd::rt::testing::migrate();
          },
          [&](done d) {
            if (res.next[d.sender] != per_sender) ++res.out_of_order;  // done overtook a number
            ++dones;
          });
    }
  });
  CHECK(r.is_normal());
  res.worker_mask = worker_mask.load();
  return res;
}
}  // namespace

TEST_CASE("many senders on every worker: each sender's numbers arrive in order, none lost", "[fifo]") {
  unsigned workers = HERD_WORKERS();
  const uint32_t senders = 2 * workers + 4;
  const uint32_t per_sender = uint32_t(herd::test::scaled(20000, 2000));
  fifo_result res = run_fifo(workers, senders, per_sender, false);
  CHECK(res.out_of_order == 0);
  CHECK(res.total == uint64_t(senders) * per_sender);
  for (uint32_t s = 0; s < senders; ++s) CHECK(res.next[s] == per_sender);
  INFO("workers the senders ran on (bit mask): " << res.worker_mask);
  if (workers > 1) CHECK(std::popcount(res.worker_mask) >= 2);  // really cross-worker
}

// Uses rt::testing::migrate (an earlier version of it could livelock: the
// worker the fiber had to leave kept popping and re-queueing it while the
// other worker slept).
TEST_CASE("FIFO survives senders and receiver migrating between workers", "[fifo][migrate]") {
  unsigned workers = HERD_WORKERS();
  const uint32_t senders = 2 * workers + 4;
  const uint32_t per_sender = uint32_t(herd::test::scaled(20000, 2000));
  fifo_result res = run_fifo(workers, senders, per_sender, true);
  CHECK(res.out_of_order == 0);
  CHECK(res.total == uint64_t(senders) * per_sender);
}

TEST_CASE("a sender on a foreign thread: its messages arrive in order", "[fifo]") {
  unsigned workers = HERD_WORKERS();
  const int count = int(herd::test::scaled(50000, 5000));
  int expected = 0, out_of_order = 0;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    std::thread t([me, count] {
      for (int i = 0; i < count; ++i) herd::send(me, i);
    });
    for (int i = 0; i < count; ++i)
      herd::receive([&](int v) {
        if (v != expected) ++out_of_order;
        expected = v + 1;
      });
    herd::blocking([&] { t.join(); });
  });
  CHECK(r.is_normal());
  CHECK(out_of_order == 0);
  CHECK(expected == count);
}

TEST_CASE("a selective receive that takes one sender's messages first leaves the others in order", "[fifo]") {
  unsigned workers = HERD_WORKERS();
  const uint32_t per_sender = 2000;
  std::vector<uint32_t> order0, order1;
  auto r = run_node(herd::test::opts(workers), [&] {
    herd::pid me = herd::self();
    for (uint32_t s = 0; s < 2; ++s)
      herd::spawn([me, s, per_sender] {
        for (uint32_t i = 0; i < per_sender; ++i) herd::send(me, seq{s, i});
        herd::send(me, done{s});
      });
    int dones = 0;
    while (dones < 2) herd::receive([&](done) { ++dones; });
    // Everything is queued now: take sender 1's messages first, then sender 0's.
    for (uint32_t i = 0; i < per_sender; ++i)
      herd::receive(herd::when([](const seq& m) { return m.sender == 1; }, [&](seq m) { order1.push_back(m.n); }));
    for (uint32_t i = 0; i < per_sender; ++i) herd::receive([&](seq m) { order0.push_back(m.n); });
  });
  CHECK(r.is_normal());
  REQUIRE(order0.size() == per_sender);
  REQUIRE(order1.size() == per_sender);
  bool ok0 = true, ok1 = true;
  for (uint32_t i = 0; i < per_sender; ++i) {
    ok0 = ok0 && order0[i] == i;
    ok1 = ok1 && order1[i] == i;
  }
  CHECK(ok0);
  CHECK(ok1);
}

// Regression: a lone worker going to park must re-check the queues, or a
// foreign thread's push that saw it awake (and so woke nobody) is lost.
TEST_CASE("a foreign thread's wake-ups are never lost, one at a time on one worker", "[fifo][wakeup]") {
  const int rounds = int(herd::test::scaled(20000, 2000));
  std::atomic<int> acked{0};
  int timeouts = 0;
  auto r = run_node(herd::test::opts(1), [&] {
    herd::pid me = herd::self();
    std::thread t([me, rounds, &acked] {
      for (int i = 0; i < rounds; ++i) {
        herd::send(me, i);
        while (acked.load(std::memory_order_acquire) <= i) std::this_thread::yield();
      }
    });
    for (int i = 0; i < rounds; ++i) {
      herd::receive([](int) {}, herd::after(5s, [&] { ++timeouts; }));
      acked.store(i + 1, std::memory_order_release);
    }
    herd::blocking([&] { t.join(); });
  });
  CHECK(r.is_normal());
  CHECK(timeouts == 0);
}
