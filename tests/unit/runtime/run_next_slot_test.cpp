// The run next slot's owner/thief protocol (runtime/src/sched/run_next.hpp)
// on plain threads: an owner putting and taking as fast as it can, thieves
// stealing all the time. Every item put is taken exactly once, by the owner
// (a take, or evicted by a put) or by one thief.
#include "sched/asym_fence.hpp"
#include "sched/cpu_relax.hpp"
#include "sched/run_next.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

using ::herd::rt::run_next_slot;

namespace {

void pause_for(unsigned n) {
  for (unsigned k = 0; k < n; ++k) ::herd::rt::cpu_relax();
}

struct item {
  std::atomic<uint32_t> taken{0};
};

struct outcome {
  uint64_t by_owner = 0;
  uint64_t by_thieves = 0;
  uint64_t attempts = 0;
  uint64_t twice = 0;
  uint64_t never = 0;
};

outcome hammer(bool light, std::size_t n_items, unsigned n_thieves) {
  run_next_slot<item> slot(light);
  auto items = std::make_unique<item[]>(n_items);
  std::atomic<bool> done{false};
  std::atomic<uint64_t> stolen{0};
  std::vector<std::thread> thieves;
  for (unsigned t = 0; t < n_thieves; ++t)
    thieves.emplace_back([&] {
      uint64_t mine = 0;
      while (!done.load(std::memory_order_acquire)) {
        if (item* it = slot.steal()) {
          it->taken.fetch_add(1, std::memory_order_relaxed);
          ++mine;
        }
      }
      stolen.fetch_add(mine);
    });
  uint64_t owner = 0;
  auto mark = [&](item* it) {
    if (!it) return;
    it->taken.fetch_add(1, std::memory_order_relaxed);
    ++owner;
  };
  uint64_t rng = 0x9E3779B97F4A7C15ull;
  for (std::size_t i = 0; i < n_items; ++i) {
    mark(slot.put(&items[i]));
    // Mostly a take right after the put; now and then a pause of random
    // length first (a thief's attempt then ends anywhere around the take, or
    // finds the owner away, as when it is stuck), or a second put over the
    // occupant (the evicting exchange).
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    if (rng % 16 == 0) pause_for(static_cast<unsigned>(rng >> 40) % 2048);
    if (i % 8 != 7) mark(slot.take());
  }
  mark(slot.take());
  done.store(true, std::memory_order_release);
  for (auto& t : thieves) t.join();
  mark(slot.take());  // nothing: every item was taken
  outcome o;
  o.by_owner = owner;
  o.by_thieves = stolen.load();
  o.attempts = slot.attempts();
  for (std::size_t i = 0; i < n_items; ++i) {
    uint32_t k = items[i].taken.load();
    if (k > 1) ++o.twice;
    if (k == 0) ++o.never;
  }
  return o;
}

}  // namespace

TEST_CASE("run next: an item put is taken once, by its owner or by one thief, when thieves race every take",
          "[sched][run_next]") {
  const bool light = GENERATE(true, false);
  if (light && !::herd::rt::asym::available()) {
    WARN("membarrier is not available here: the owner's load-and-store take is not used");
    return;
  }
  constexpr std::size_t n_items = 400000;
  outcome o = hammer(light, n_items, 2);
  INFO((light ? "load-and-store take" : "exchange take") << ": owner " << o.by_owner << ", thieves " << o.by_thieves
                                                          << " in " << o.attempts << " attempts");
  CHECK(o.twice == 0);
  CHECK(o.never == 0);
  CHECK(o.by_owner + o.by_thieves == n_items);
  // The race was run: thieves took some, as they do only from the slot.
  CHECK(o.by_thieves > 0);
}
