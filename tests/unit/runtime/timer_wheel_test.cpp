// Tests for herd::rt::timer_wheel (runtime/src/time/timer_wheel.hpp).
#include "time/timer_wheel.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <vector>

using herd::rt::timer_node;
using herd::rt::timer_wheel;

namespace {

struct test_timer {
  timer_node node;  // first member: timer_node* <-> test_timer* by cast
  int id = 0;
};
static_assert(std::is_standard_layout_v<test_timer>);

test_timer* owner_of(timer_node* n) { return reinterpret_cast<test_timer*>(n); }

std::vector<test_timer> make_timers(size_t n) {
  std::vector<test_timer> v(n);
  for (size_t i = 0; i < n; ++i) v[i].id = static_cast<int>(i);
  return v;
}

// Reference model: linked timers in a multimap by deadline; per id, whether it
// is linked, its iterator, and its effective deadline (max(deadline, now when
// linked); nodes linked during advance(target) with deadline <= target count
// as linked at target). The wheel must fire exactly the model's due set, each
// node at now() == its effective deadline, in non-decreasing effective order.
class wheel_model_check {
 public:
  wheel_model_check(uint64_t start, size_t nodes, uint64_t seed)
      : wheel_(start), timers_(make_timers(nodes)), linked_(nodes, false), it_(nodes),
        effective_(nodes, 0), due_(nodes, 0), fired_(nodes, 0), rng_(seed) {}

  uint64_t rand_below(uint64_t n) { return n == 0 ? 0 : std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }

  uint64_t random_deadline() {
    const uint64_t now = wheel_.now();
    switch (rand_below(10)) {
      case 0: return now + rand_below(64);                     // level 0
      case 1: return now + rand_below(4096);                   // levels 0..1
      case 2: return rand_below(100'000'001);                  // absolute 0..1e8: often overdue
      case 3: return now + rand_below(uint64_t{1} << 40);      // level 5, sometimes beyond the ring
      case 4: return now;                                      // due right now
      case 5: return now == 0 ? 0 : now - 1 - rand_below(std::min<uint64_t>(now, 1000));  // overdue
      default: return now + rand_below(100'000'001);           // 0..1e8 ahead
    }
  }

  uint64_t random_step() {
    switch (rand_below(12)) {
      case 0: return 0;
      case 1: case 2: return rand_below(64);
      case 3: case 4: return rand_below(5000);
      case 5: case 6: return rand_below(1'000'001);
      case 7: case 8: return rand_below(100'000'001);
      case 9: return 10'000'000'000ull + rand_below(10'000'000'000'000ull);  // huge jump
      case 10: return uint64_t{1} << 36;  // exactly one top-level rotation
      default: return rand_below(300);
    }
  }

  void insert(int id, uint64_t deadline) {
    REQUIRE(!linked_[id]);
    test_timer& t = timers_[id];
    wheel_.insert(&t.node, deadline);
    linked_[id] = true;
    it_[id] = model_.emplace(deadline, id);
    const uint64_t base = in_advance_ && deadline <= target_ ? target_ : wheel_.now();
    effective_[id] = std::max(deadline, base);
  }

  void remove(int id) {
    REQUIRE(linked_[id]);
    wheel_.remove(&timers_[id].node);
    linked_[id] = false;
    model_.erase(it_[id]);
    if (due_[id]) {  // removed inside a callback before its turn: must not fire
      due_[id] = 0;
      --due_count_;
    }
  }

  int random_id() { return static_cast<int>(rand_below(timers_.size())); }

  void check_next_deadline() {
    const uint64_t nd = wheel_.next_deadline();
    if (model_.empty()) {
      REQUIRE(nd == UINT64_MAX);
      return;
    }
    const uint64_t now = wheel_.now();
    const uint64_t earliest = std::max(model_.begin()->first, now);  // == min effective deadline
    REQUIRE(nd >= now);
    REQUIRE(nd <= earliest);                          // never later than the true minimum
    if ((earliest ^ now) < 64) REQUIRE(nd == earliest);  // exact on level 0
  }

  void advance(uint64_t target, bool mutate_in_callbacks) {
    const uint64_t eff_target = std::max(target, wheel_.now());
    // The due set, fixed before the call (callbacks may only shrink it by removes).
    due_count_ = 0;
    for (auto it = model_.begin(); it != model_.end() && it->first <= eff_target; ++it) {
      due_[it->second] = 1;
      ++due_count_;
    }
    const size_t expected_before_callbacks = due_count_;
    size_t fired = 0;
    uint64_t last_effective = 0;
    in_advance_ = true;
    target_ = eff_target;
    wheel_.advance(target, [&](timer_node* n) {
      const int id = owner_of(n)->id;
      REQUIRE_FALSE(n->linked);
      REQUIRE(linked_[id]);
      REQUIRE(due_[id] == 1);  // in the due set, and not fired yet
      REQUIRE(n->deadline <= eff_target);
      REQUIRE(wheel_.now() == effective_[id]);  // never early, and exactly at its tick
      REQUIRE(effective_[id] >= last_effective);
      last_effective = effective_[id];
      due_[id] = 0;
      --due_count_;
      fired_[id] = 1;
      ++fired;
      linked_[id] = false;
      model_.erase(it_[id]);
      if (!mutate_in_callbacks) return;
      switch (rand_below(8)) {
        case 0: {  // re-insert self, due within this advance: must wait for the next one
          insert(id, eff_target - rand_below(1000));
          break;
        }
        case 1: insert(id, random_deadline()); break;
        case 2: {  // remove someone else (maybe one still due in this advance)
          const int other = random_id();
          if (linked_[other]) remove(other);
          break;
        }
        case 3: {
          const int other = random_id();
          if (!linked_[other]) insert(other, random_deadline());
          break;
        }
        default: break;
      }
    });
    in_advance_ = false;
    REQUIRE(wheel_.now() == eff_target);
    REQUIRE(due_count_ == 0);  // everything due (and not removed meanwhile) fired
    REQUIRE(fired <= expected_before_callbacks);
  }

  void run(int ops, bool mutate_in_callbacks) {
    for (int op = 0; op < ops; ++op) {
      const uint64_t r = rand_below(100);
      if (r < 45) {
        const int id = random_id();
        if (!linked_[id]) insert(id, random_deadline());
      } else if (r < 65) {
        const int id = random_id();
        if (linked_[id]) remove(id);
      } else {
        advance(wheel_.now() + random_step(), mutate_in_callbacks);
      }
      REQUIRE(wheel_.size() == model_.size());
      check_next_deadline();
    }
    // Drain everything: the far end of time.
    advance(UINT64_MAX, false);
    REQUIRE(model_.empty());
    REQUIRE(wheel_.size() == 0);
    REQUIRE(wheel_.next_deadline() == UINT64_MAX);
  }

 private:
  timer_wheel wheel_;
  std::vector<test_timer> timers_;
  std::vector<bool> linked_;
  std::vector<std::multimap<uint64_t, int>::iterator> it_;
  std::vector<uint64_t> effective_;
  std::vector<char> due_;
  std::vector<char> fired_;
  size_t due_count_ = 0;
  std::multimap<uint64_t, int> model_;
  std::mt19937_64 rng_;
  bool in_advance_ = false;
  uint64_t target_ = 0;
};

}  // namespace

TEST_CASE("timer_wheel: randomised against a multimap model, nodes never fire early and always fire by their deadline",
          "[timer_wheel]") {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    INFO("seed " << seed);
    wheel_model_check check(0, 3000, seed);
    check.run(60'000, false);
  }
}

TEST_CASE("timer_wheel: randomised model with callbacks that insert, remove and re-insert", "[timer_wheel]") {
  for (uint64_t seed = 100; seed <= 105; ++seed) {
    INFO("seed " << seed);
    wheel_model_check check(0, 3000, seed);
    check.run(60'000, true);
  }
}

TEST_CASE("timer_wheel: randomised model starting at odd and very large clock values", "[timer_wheel]") {
  const uint64_t starts[] = {63, 64 * 64 - 1, (uint64_t{1} << 36) - 5, (uint64_t{1} << 62) + 12345,
                             UINT64_MAX - (uint64_t{1} << 40)};
  uint64_t seed = 1000;
  for (uint64_t start : starts) {
    INFO("start " << start);
    wheel_model_check check(start, 1000, ++seed);
    check.run(20'000, true);
  }
}

TEST_CASE("timer_wheel: a node fires in the advance that reaches its deadline, not before", "[timer_wheel]") {
  // Deadlines straddling every level boundary, checked tick by tick around them.
  timer_wheel w(0);
  std::vector<uint64_t> deadlines;
  for (unsigned level = 0; level < 7; ++level) {
    const uint64_t b = uint64_t{1} << (6 * level);
    for (uint64_t d : {b - 1, b, b + 1}) deadlines.push_back(d);
  }
  std::sort(deadlines.begin(), deadlines.end());
  deadlines.erase(std::unique(deadlines.begin(), deadlines.end()), deadlines.end());
  auto timers = make_timers(deadlines.size());
  for (size_t i = 0; i < deadlines.size(); ++i) w.insert(&timers[i].node, deadlines[i]);
  for (size_t i = 0; i < deadlines.size(); ++i) {
    const uint64_t d = deadlines[i];
    int fired = 0;
    if (d > 0) {
      w.advance(d - 1, [&](timer_node*) { ++fired; });
      REQUIRE(fired == 0);
      REQUIRE(w.next_deadline() <= d);
    }
    w.advance(d, [&](timer_node* n) {
      REQUIRE(owner_of(n)->id == static_cast<int>(i));
      ++fired;
    });
    REQUIRE(fired == 1);
  }
  REQUIRE(w.size() == 0);
}

TEST_CASE("timer_wheel: fire order is non-decreasing in deadline", "[timer_wheel]") {
  std::mt19937_64 rng(7);
  timer_wheel w(0);
  auto timers = make_timers(10'000);
  for (auto& t : timers) w.insert(&t.node, rng() % 50'000'000);
  uint64_t last = 0;
  size_t fired = 0;
  w.advance(100'000'000, [&](timer_node* n) {
    REQUIRE(n->deadline >= last);
    last = n->deadline;
    ++fired;
  });
  REQUIRE(fired == timers.size());
}

TEST_CASE("timer_wheel: remove is O(1) and a removed node never fires", "[timer_wheel]") {
  std::mt19937_64 rng(11);
  timer_wheel w(5);
  auto timers = make_timers(20'000);
  std::vector<char> removed(timers.size(), 0);
  for (auto& t : timers) {
    // All levels, incl. far beyond the top ring and overdue.
    const unsigned shift = static_cast<unsigned>(rng() % 50);
    w.insert(&t.node, rng() % (uint64_t{1} << shift));
  }
  for (size_t i = 0; i < timers.size(); i += 2) {
    w.remove(&timers[i].node);
    REQUIRE_FALSE(timers[i].node.linked);
    removed[i] = 1;
  }
  REQUIRE(w.size() == timers.size() / 2);
  size_t fired = 0;
  w.advance(UINT64_MAX, [&](timer_node* n) {
    REQUIRE_FALSE(removed[owner_of(n)->id]);
    ++fired;
  });
  REQUIRE(fired == timers.size() / 2);
  REQUIRE(w.size() == 0);
}

TEST_CASE("timer_wheel: a node re-inserted inside fire() fires in a later advance, not the same one",
          "[timer_wheel]") {
  timer_wheel w(0);
  auto timers = make_timers(3);
  w.insert(&timers[0].node, 10);
  w.insert(&timers[1].node, 20);
  int fires0 = 0, fires1 = 0, fires2 = 0;
  auto cb = [&](timer_node* n) {
    switch (owner_of(n)->id) {
      case 0:
        ++fires0;
        w.insert(n, 0);                                        // already overdue: next advance
        if (fires0 == 1) w.insert(&timers[2].node, 15);        // <= target: next advance too
        break;
      case 1: ++fires1; break;
      case 2: ++fires2; break;
    }
  };
  w.advance(100, cb);
  REQUIRE(fires0 == 1);
  REQUIRE(fires1 == 1);
  REQUIRE(fires2 == 0);
  REQUIRE(w.size() == 2);
  REQUIRE(w.next_deadline() == 100);  // due now
  w.advance(100, cb);                 // same tick: the deferred nodes fire now
  REQUIRE(fires0 == 2);
  REQUIRE(fires2 == 1);
  REQUIRE(w.size() == 1);             // node 0 re-inserted itself again
  w.remove(&timers[0].node);
  REQUIRE(w.size() == 0);

  // A callback that always re-arms at "now" cannot spin: one fire per advance.
  timer_wheel w2(0);
  test_timer loop{};
  w2.insert(&loop.node, 0);
  int spins = 0;
  for (int i = 0; i < 5; ++i) {
    w2.advance(1000, [&](timer_node* n) {
      ++spins;
      w2.insert(n, w2.now());
    });
  }
  REQUIRE(spins == 5);
}

TEST_CASE("timer_wheel: remove inside fire() of a node due in the same advance prevents it firing",
          "[timer_wheel]") {
  timer_wheel w(0);
  auto timers = make_timers(4);
  w.insert(&timers[0].node, 7);
  w.insert(&timers[1].node, 7);  // same slot as 0
  w.insert(&timers[2].node, 9);
  w.insert(&timers[3].node, 70'000);
  std::vector<int> order;
  w.advance(100'000, [&](timer_node* n) {
    const int id = owner_of(n)->id;
    order.push_back(id);
    if (id == 0) {
      w.remove(&timers[1].node);
      w.remove(&timers[2].node);
    }
  });
  REQUIRE(order == std::vector<int>{0, 3});
}

TEST_CASE("timer_wheel: next_deadline is never later than the true minimum and exact for level-0 deadlines",
          "[timer_wheel]") {
  timer_wheel w(1000);
  REQUIRE(w.next_deadline() == UINT64_MAX);
  auto timers = make_timers(4);

  SECTION("level 0 is exact") {
    // now = 1000 = 15*64 + 40: ticks 1000..1023 are in now's level-0 block.
    w.insert(&timers[0].node, 1020);
    REQUIRE(w.next_deadline() == 1020);
    w.insert(&timers[1].node, 1003);
    REQUIRE(w.next_deadline() == 1003);
    w.remove(&timers[1].node);
    REQUIRE(w.next_deadline() == 1020);
  }
  SECTION("higher levels report a slot start, never later") {
    w.insert(&timers[0].node, 1100);  // level 1: its 64-tick slot starts at 1088
    REQUIRE(w.next_deadline() == 1088);
    w.insert(&timers[2].node, 5000);  // level 2 (differs from 1000 in bit 12): slot starts at 4096
    w.insert(&timers[1].node, 1'000'000'000);
    REQUIRE(w.next_deadline() == 1088);
    w.remove(&timers[0].node);
    REQUIRE(w.next_deadline() == 4096);
    w.remove(&timers[2].node);
    const uint64_t nd = w.next_deadline();
    REQUIRE(nd <= 1'000'000'000);
    REQUIRE(nd > 1000);
    // Following next_deadline() converges on the deadline without firing early.
    int steps = 0;
    bool fired = false;
    while (!fired) {
      const uint64_t t = w.next_deadline();
      REQUIRE(t <= 1'000'000'000);
      w.advance(t, [&](timer_node* n) {
        REQUIRE(n->deadline == 1'000'000'000);
        REQUIRE(w.now() == 1'000'000'000);
        fired = true;
      });
      REQUIRE(++steps <= 7);  // at most one wake-up per level (plus the firing one)
    }
  }
  SECTION("overdue nodes are due now") {
    w.insert(&timers[0].node, 10);
    REQUIRE(w.next_deadline() == 1000);
    w.insert(&timers[1].node, 1001);
    REQUIRE(w.next_deadline() == 1000);
  }
  SECTION("far beyond the top ring") {
    w.insert(&timers[0].node, UINT64_MAX);
    const uint64_t nd = w.next_deadline();
    REQUIRE(nd > 1000);
    REQUIRE(nd <= 1000 + timer_wheel::k_rotation);
    w.advance(nd, [&](timer_node*) { FAIL("fired early"); });
    REQUIRE(w.size() == 1);
    REQUIRE(w.next_deadline() > nd);
  }
}

TEST_CASE("timer_wheel: 1,000,000 inserts then remove all leaves size() == 0", "[timer_wheel]") {
  constexpr size_t n = 1'000'000;
  std::mt19937_64 rng(3);
  timer_wheel w(123);
  auto timers = std::make_unique<test_timer[]>(n);
  for (size_t i = 0; i < n; ++i) w.insert(&timers[i].node, 123 + rng() % 100'000'000);
  REQUIRE(w.size() == n);
  size_t visited = 0;
  w.for_each([&](timer_node*) { ++visited; });
  REQUIRE(visited == n);
  for (size_t i = 0; i < n; ++i) w.remove(&timers[(i * 7919) % n].node);  // scattered order (7919 is prime, n not a multiple)
  REQUIRE(w.size() == 0);
  REQUIRE(w.next_deadline() == UINT64_MAX);
  w.advance(UINT64_MAX, [](timer_node*) { FAIL("nothing is linked"); });
}

TEST_CASE("timer_wheel: for_each visits every node and allows removing the visited one", "[timer_wheel]") {
  std::mt19937_64 rng(5);
  timer_wheel w(0);
  auto timers = make_timers(5000);
  for (auto& t : timers) w.insert(&t.node, rng() % (uint64_t{1} << (rng() % 45)));
  std::vector<int> seen(timers.size(), 0);
  w.for_each([&](timer_node* n) {
    const int id = owner_of(n)->id;
    ++seen[id];
    if (id % 3 == 0) w.remove(n);
  });
  for (int s : seen) REQUIRE(s == 1);
  REQUIRE(w.size() == timers.size() - (timers.size() + 2) / 3);
  std::fill(seen.begin(), seen.end(), 0);
  w.for_each([&](timer_node* n) { ++seen[owner_of(n)->id]; });
  for (size_t i = 0; i < seen.size(); ++i) REQUIRE(seen[i] == (i % 3 == 0 ? 0 : 1));
}

TEST_CASE("timer_wheel: a long-gap advance is fast", "[timer_wheel]") {
  const auto t0 = std::chrono::steady_clock::now();
  {
    timer_wheel w(0);
    auto timers = make_timers(10);
    for (int i = 0; i < 10; ++i) w.insert(&timers[i].node, uint64_t{1} << (4 * i + 1));
    size_t fired = 0;
    w.advance(1'000'000'000'000ull, [&](timer_node*) { ++fired; });  // 10^12 ticks
    REQUIRE(fired == 10);
  }
  {
    // 10^9 ticks with 3 timers, one of them beyond the gap.
    timer_wheel w(17);
    auto timers = make_timers(3);
    w.insert(&timers[0].node, 1'000);
    w.insert(&timers[1].node, 999'999'999);
    w.insert(&timers[2].node, 5'000'000'000);
    size_t fired = 0;
    w.advance(1'000'000'017, [&](timer_node*) { ++fired; });
    REQUIRE(fired == 2);
    REQUIRE(w.size() == 1);
  }
  {
    // Far beyond the top ring (2^36 ticks): without the rebase shortcut this
    // would walk the ring ~2^27 times per node.
    timer_wheel w(0);
    auto timers = make_timers(10);
    for (int i = 0; i < 10; ++i) w.insert(&timers[i].node, (uint64_t{1} << 62) + uint64_t(i) * (uint64_t{1} << 50));
    size_t fired = 0;
    uint64_t last = 0;
    w.advance((uint64_t{1} << 62) + (uint64_t{1} << 52), [&](timer_node* n) {
      REQUIRE(w.now() == n->deadline);
      REQUIRE(n->deadline >= last);
      last = n->deadline;
      ++fired;
    });
    REQUIRE(fired == 5);  // i = 0..4
    w.advance(UINT64_MAX, [&](timer_node*) { ++fired; });
    REQUIRE(fired == 10);
  }
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  CHECK(elapsed < std::chrono::seconds(1));
}
