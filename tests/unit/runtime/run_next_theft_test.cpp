// Run next's owner takes without a locked instruction; a thief takes with
// one, after a membarrier (runtime/src/sched/run_next.hpp). Here, on the real
// scheduler, every worker is open to thieves at every pick
// (testing::open_run_next) and the idle one spins (busy_wait), so steal's
// last pass races the owner's take all the time, not only when a worker is
// stuck for 10 ms. A ping-pong pair lives in run next; a fiber run twice, or
// dropped by both sides, shows as a turn taken twice at once, a lost turn or
// a pair that never finishes. This checks that the scheduler's takes, puts
// and steals hold together; the slot's own race (a thief's exchange inside
// the owner's take) is hit far more often by run_next_slot_test, the one
// that fails when the protocol is broken.
#include <herd/runtime/runtime.hpp>
#include <herd/runtime/sched.hpp>
#include <herd/runtime/testing.hpp>

#include <catch2/catch.hpp>

#include "raw_task.hpp"
#include "sched/asym_fence.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>

using namespace herd::rt;
using namespace herd_test_raw;

namespace {

constexpr uint32_t turns = 300000;  // per side

struct pair_state;

struct player : task {
  pair_state* pair = nullptr;
  int side = 0;
  std::atomic<int> inside{0};  // >1: the fiber is running twice
  uint64_t moves = 0;          // turns that began on another worker than the last one
};

struct pair_state {
  std::atomic<int> turn{0};  // whose turn: 0 or 1
  player p[2];
  std::atomic<uint64_t> played{0};
  std::atomic<uint64_t> overlaps{0};
};

void busy_for(std::chrono::microseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}

void play(task* t) {
  auto* me = static_cast<player*>(t);
  pair_state* s = me->pair;
  player& other = s->p[1 - me->side];
  uint32_t last_worker = worker_index();
  for (uint32_t i = 0; i < turns; ++i) {
    // acquire: pairs with the other side's release of the turn.
    while (s->turn.load(std::memory_order_acquire) != me->side) park();
    if (me->inside.fetch_add(1, std::memory_order_relaxed) != 0) s->overlaps.fetch_add(1, std::memory_order_relaxed);
    if (uint32_t w = worker_index(); w != last_worker) ++me->moves, last_worker = w;
    s->played.fetch_add(1, std::memory_order_relaxed);
    me->inside.fetch_sub(1, std::memory_order_relaxed);
    s->turn.store(1 - me->side, std::memory_order_release);
    wake(&other);  // into this worker's run next
    // Now and then the waker stays on for a while: 20 µs (a spinning
    // thief's attempt may then find the owner away and win), and a few
    // times 25 ms, long enough for the monitor to find the worker stuck and
    // wake the other to take run next (the path outside this test's hook).
    if (i % 1024 == 0) busy_for(std::chrono::microseconds(20));
    if (i % 75000 == 74999) busy_for(std::chrono::milliseconds(25));
  }
}

struct open_thieves {
  open_thieves() { testing::open_run_next(true); }
  ~open_thieves() { testing::open_run_next(false); }
};

}  // namespace

TEST_CASE("run next stays one fiber's when thieves race its owner's take at every pick", "[sched][run_next]") {
  INFO("owner takes " << (asym::available() ? "with a load and a store (membarrier)" : "with an exchange"));
  runtime_options o = quiet_options(2);
  o.busy_wait = max_busy_wait;  // the worker with nothing to run keeps stealing
  runtime r(o);
  open_thieves open;
  r.start();
  // One pair: one worker runs it, the other has nothing else to do and
  // tries to steal it all the time (a second pair would keep both busy).
  pair_state s;
  for (int side = 0; side < 2; ++side) {
    s.p[side].pair = &s;
    s.p[side].side = side;
  }
  for (auto& p : s.p) launch(p, &play, nullptr);
  const bool finished = eventually(
      [&] { return s.p[0].done.load(std::memory_order_acquire) && s.p[1].done.load(std::memory_order_acquire); },
      std::chrono::seconds(120));
  const uint64_t attempts = testing::run_next_steal_attempts();
  const uint64_t moves = s.p[0].moves + s.p[1].moves;
  INFO("played " << s.played.load() << ", moves between workers " << moves << ", overlaps " << s.overlaps.load()
                 << ", thieves' attempts " << attempts);
  REQUIRE(finished);
  r.stop();
  CHECK(s.overlaps.load() == 0);
  CHECK(s.played.load() == 2 * uint64_t(turns));
  // The race was run: the pair moved between the workers, and only a steal
  // of run next moves it (neither player is ever on a ring).
  CHECK(moves > 0);
}
