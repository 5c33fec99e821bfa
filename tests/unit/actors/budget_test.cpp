// The reduction budget: a process that runs out of it inside a receive, with
// messages still waiting, runs next on its worker (as a process its next
// message had woken would); one that runs out anywhere else goes to the back
// of the ring. Counted in turns on one worker, never timed.
#include <herd/actors.hpp>

#include <catch2/catch.hpp>

#include "support/node_fixture.hpp"

#include <atomic>
#include <cstdint>

using herd::test::run_node;

namespace budget_test_msgs {
struct item {
  uint64_t n;
};
}  // namespace budget_test_msgs
using namespace budget_test_msgs;

namespace {
// n processes that count a turn and yield, until stop.
void spawn_spinners(int n, std::atomic<uint64_t>& turns, std::atomic<bool>& stop) {
  for (int i = 0; i < n; ++i)
    herd::spawn([&turns, &stop] {
      while (!stop.load(std::memory_order_relaxed)) {
        turns.fetch_add(1, std::memory_order_relaxed);
        herd::yield();
      }
    });
}
}  // namespace

TEST_CASE("a receive out of budget with mail waiting runs next, and the ring still gets every other turn",
          "[receive][sched]") {
  herd::node_options o = herd::test::opts(1);
  constexpr int spinners = 8;
  constexpr uint64_t slices = 16;
  const uint64_t backlog = uint64_t(o.reduction_budget) * slices;
  std::atomic<uint64_t> turns{0};
  std::atomic<bool> stop{false};
  uint64_t during = 0, taken = 0;
  auto r = run_node(o, [&] {
    spawn_spinners(spinners, turns, stop);
    const herd::pid me = herd::self();
    for (uint64_t i = 0; i < backlog; ++i) herd::send(me, item{i});
    herd::yield();  // the drain starts on a fresh slice, behind one turn of each spinner
    const uint64_t t0 = turns.load(std::memory_order_relaxed);
    for (uint64_t i = 0; i < backlog; ++i) herd::receive([&](item m) { taken += m.n == i; });
    during = turns.load(std::memory_order_relaxed) - t0;
    stop.store(true, std::memory_order_relaxed);
  });
  CHECK(r.is_normal());
  CHECK(taken == backlog);
  INFO("spinner turns while the receiver took " << backlog << " messages in " << slices
                                                << " slices: " << during << " (back of the ring each time: "
                                                << spinners * (slices - 1) << " or more)");
  // One spinner between two of the receiver's slices: ~slices turns. Sent to
  // the back of the ring, every spinner would run between them.
  CHECK(during >= slices / 2);
  CHECK(during <= 3 * slices);
}

TEST_CASE("a process out of budget outside a receive goes to the back of the ring", "[sched]") {
  herd::node_options o = herd::test::opts(1);
  constexpr int spinners = 8;
  std::atomic<uint64_t> turns{0};
  std::atomic<bool> stop{false};
  uint64_t during = 0;
  constexpr uint64_t sends = 16;
  auto r = run_node(o, [&] {
    spawn_spinners(spinners, turns, stop);
    herd::yield();
    // Sends to a process that is gone cost a reduction each and never
    // receive: each slice ends in a send, with no mail waiting here.
    const herd::pid gone = herd::spawn([] {});
    herd::yield();
    const uint64_t t0 = turns.load(std::memory_order_relaxed);
    for (uint64_t i = 0; i < sends * o.reduction_budget; ++i) herd::send(gone, item{i});
    during = turns.load(std::memory_order_relaxed) - t0;
    stop.store(true, std::memory_order_relaxed);
  });
  CHECK(r.is_normal());
  INFO("spinner turns during " << sends << " slices of sends: " << during);
  CHECK(during >= spinners * (sends - 1));
}
