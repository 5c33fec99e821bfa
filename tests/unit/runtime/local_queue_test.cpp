// Tests for herd::rt::local_queue (runtime/src/sched/local_queue.hpp).
#include <herd/runtime/sanitizers.hpp>
#include "sched/local_queue.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

using herd::rt::local_queue;

namespace {

#if HERD_TSAN
constexpr bool k_tsan = true;
#else
constexpr bool k_tsan = false;
#endif

struct item {
  uint32_t id = 0;
  uint32_t payload = 0;  // written by the producer before push, checked by the consumer
};

std::vector<item> make_items(size_t n) {
  std::vector<item> v(n);
  for (size_t i = 0; i < n; ++i) v[i].id = static_cast<uint32_t>(i);
  return v;
}

// Initial indices to run the single-threaded tests at: plain, and straddling
// the u32 wrap of the packed head/tail counters.
constexpr uint32_t k_starts[] = {0, 12345, UINT32_MAX, UINT32_MAX - 1, UINT32_MAX - 100, UINT32_MAX - 128,
                                 UINT32_MAX - 255, 0x7fffffffu};

}  // namespace

TEST_CASE("local_queue: single thread pops in FIFO order", "[local_queue]") {
  for (uint32_t start : k_starts) {
    INFO("initial index " << start);
    auto items = make_items(1000);
    local_queue<item> q(start);
    REQUIRE(q.pop() == nullptr);
    REQUIRE(q.empty_approx());
    // Fill completely, drain completely.
    for (uint32_t i = 0; i < 256; ++i) REQUIRE(q.push_back(&items[i]));
    REQUIRE(q.size_approx() == 256);
    REQUIRE_FALSE(q.push_back(&items[256]));
    for (uint32_t i = 0; i < 256; ++i) REQUIRE(q.pop() == &items[i]);
    REQUIRE(q.pop() == nullptr);
    // Interleaved, running the ring round many times.
    std::mt19937 rng(start);
    uint32_t pushed = 0, popped = 0;
    for (int round = 0; round < 2000; ++round) {
      const uint32_t pushes = rng() % 9;
      for (uint32_t k = 0; k < pushes; ++k) {
        if (q.push_back(&items[pushed % 1000])) ++pushed;
      }
      const uint32_t pops = rng() % 9;
      for (uint32_t k = 0; k < pops && popped < pushed; ++k) REQUIRE(q.pop() == &items[popped++ % 1000]);
      REQUIRE(q.size_approx() == pushed - popped);
    }
    while (popped < pushed) REQUIRE(q.pop() == &items[popped++ % 1000]);
    REQUIRE(q.pop() == nullptr);
  }
}

TEST_CASE("local_queue: when full, push_back fails and push_overflow moves the oldest half plus t to the sink in order",
          "[local_queue]") {
  for (uint32_t start : k_starts) {
    INFO("initial index " << start);
    auto items = make_items(1000);
    local_queue<item> q(start);
    // Rotate the ring a bit first so the moved half wraps around the buffer end.
    for (uint32_t i = 0; i < 100; ++i) {
      REQUIRE(q.push_back(&items[999]));
      REQUIRE(q.pop() == &items[999]);
    }
    for (uint32_t i = 0; i < 256; ++i) REQUIRE(q.push_back(&items[i]));
    REQUIRE_FALSE(q.push_back(&items[256]));
    std::vector<item*> sunk;
    int sink_calls = 0;
    REQUIRE(q.push_overflow(&items[256], [&](item** v, uint32_t n) {
      ++sink_calls;
      sunk.assign(v, v + n);
    }));
    REQUIRE(sink_calls == 1);
    REQUIRE(sunk.size() == 129);
    for (uint32_t i = 0; i < 128; ++i) REQUIRE(sunk[i] == &items[i]);
    REQUIRE(sunk[128] == &items[256]);
    REQUIRE(q.size_approx() == 128);
    // The newer half stays, in order, and there is room again.
    REQUIRE(q.push_back(&items[257]));
    for (uint32_t i = 128; i < 256; ++i) REQUIRE(q.pop() == &items[i]);
    REQUIRE(q.pop() == &items[257]);
    REQUIRE(q.pop() == nullptr);
  }
}

TEST_CASE("local_queue: push_overflow refuses when the queue is not full, push_back_or_overflow always succeeds",
          "[local_queue]") {
  auto items = make_items(2000);
  local_queue<item, 8> q;
  int calls = 0;
  auto sink = [&](item**, uint32_t) { ++calls; };
  REQUIRE(q.push_back(&items[0]));
  REQUIRE_FALSE(q.push_overflow(&items[1], sink));  // room left: caller should push_back
  REQUIRE(calls == 0);
  REQUIRE(q.pop() == &items[0]);

  std::vector<item*> out;
  auto collect = [&](item** v, uint32_t n) { out.insert(out.end(), v, v + n); };
  for (uint32_t i = 0; i < 2000; ++i) q.push_back_or_overflow(&items[i], collect);
  while (item* p = q.pop()) out.push_back(p);
  // Everything exactly once (overflow sends the oldest half out ahead of
  // items already queued, so the global order is not FIFO).
  REQUIRE(out.size() == 2000);
  std::vector<int> seen(2000, 0);
  for (item* p : out) ++seen[p->id];
  for (int c : seen) REQUIRE(c == 1);
}

namespace {

template <uint32_t C>
void check_steal_half(uint32_t src_start, uint32_t dst_start) {
  auto items = make_items(C);
  for (uint32_t n = 1; n <= C; ++n) {
    INFO("n = " << n << ", src index " << src_start << ", dst index " << dst_start);
    local_queue<item, C> src(src_start), dst(dst_start);
    for (uint32_t i = 0; i < n; ++i) REQUIRE(src.push_back(&items[i]));
    const uint32_t taken = n - n / 2;  // half, rounded up
    item* ret = src.steal_into(dst);
    REQUIRE(ret == &items[taken - 1]);  // the newest of the stolen ones runs at once
    REQUIRE(dst.size_approx() == taken - 1);
    REQUIRE(src.size_approx() == n - taken);
    for (uint32_t i = 0; i + 1 < taken; ++i) REQUIRE(dst.pop() == &items[i]);
    REQUIRE(dst.pop() == nullptr);
    for (uint32_t i = taken; i < n; ++i) REQUIRE(src.pop() == &items[i]);
    REQUIRE(src.pop() == nullptr);
  }
}

}  // namespace

TEST_CASE("local_queue: steal_into takes half (rounded up) of a queue of n items, for n = 1..Capacity",
          "[local_queue]") {
  check_steal_half<256>(0, 0);
  check_steal_half<256>(UINT32_MAX - 100, UINT32_MAX - 10);  // both rings cross the u32 wrap
  check_steal_half<8>(0, 0);
  check_steal_half<8>(UINT32_MAX - 3, UINT32_MAX);
  check_steal_half<2>(UINT32_MAX, 5);
}

TEST_CASE("local_queue: steal_into from an empty queue, and into a queue without room, takes nothing",
          "[local_queue]") {
  auto items = make_items(512);
  local_queue<item> src, dst;
  REQUIRE(src.steal_into(dst) == nullptr);
  for (uint32_t i = 0; i < 256; ++i) REQUIRE(src.push_back(&items[i]));
  for (uint32_t i = 0; i < 129; ++i) REQUIRE(dst.push_back(&items[256 + i]));  // > Capacity/2 used
  REQUIRE(src.steal_into(dst) == nullptr);
  REQUIRE(src.size_approx() == 256);
  REQUIRE(dst.pop() == &items[256]);  // now exactly Capacity/2 used: room for a full steal
  REQUIRE(src.steal_into(dst) == &items[127]);
  REQUIRE(dst.size_approx() == 128 + 127);
  REQUIRE(src.size_approx() == 128);
}

TEST_CASE("local_queue: repeated steals move every item exactly once, across the index wrap", "[local_queue]") {
  // Ping-pong items between two queues by stealing, many times round both rings.
  auto items = make_items(200);
  local_queue<item, 256> a(UINT32_MAX - 5000), b(UINT32_MAX - 77);
  for (auto& it : items) REQUIRE(a.push_back(&it));
  std::vector<int> seen(items.size(), 0);
  for (int round = 0; round < 20'000; ++round) {
    local_queue<item, 256>& from = round % 2 ? a : b;
    local_queue<item, 256>& to = round % 2 ? b : a;
    if (item* p = from.steal_into(to)) REQUIRE(to.push_back(p));  // put the "run now" one back
  }
  while (item* p = a.pop()) ++seen[p->id];
  while (item* p = b.pop()) ++seen[p->id];
  for (int s : seen) REQUIRE(s == 1);
}

namespace {

// Owner pushes (and pops) n items; `thieves` threads each own a queue, steal
// from the owner or from each other, and pop from their own queue. Every item
// must be consumed exactly once, with the payload its producer wrote.
template <uint32_t C>
void stress(uint32_t n, int thieves, uint32_t initial_index) {
  struct alignas(64) thief_state {
    local_queue<item, C> q;
    uint64_t steals = 0, consumed = 0;
    explicit thief_state(uint32_t start) : q(start) {}
  };
  auto items = std::make_unique<item[]>(n);
  auto seen = std::make_unique<std::atomic<uint8_t>[]>(n);
  for (uint32_t i = 0; i < n; ++i) {
    items[i].id = i;
    seen[i].store(0, std::memory_order_relaxed);
  }
  // Catch2 assertions are not thread-safe: threads count errors, checked after join().
  std::atomic<uint64_t> bad_payloads{0}, duplicates{0};
  auto consume = [&](item* p) {
    if (p->payload != p->id * 2654435761u + 1) bad_payloads.fetch_add(1, std::memory_order_relaxed);
    if (seen[p->id].fetch_add(1, std::memory_order_relaxed) != 0) duplicates.fetch_add(1, std::memory_order_relaxed);
  };

  local_queue<item, C> owner_q(initial_index);
  std::vector<std::unique_ptr<thief_state>> ts;
  for (int i = 0; i < thieves; ++i) ts.push_back(std::make_unique<thief_state>(initial_index + 977u * uint32_t(i)));
  // relaxed is enough for this flag's purpose of ending the loop; the final
  // counts are read after join(), which synchronizes everything.
  std::atomic<bool> done{false};
  uint64_t overflow_calls = 0, owner_pops = 0;

  std::vector<std::thread> threads;
  for (int t = 0; t < thieves; ++t) {
    threads.emplace_back([&, t] {
      thief_state& me = *ts[t];
      std::minstd_rand rng(1234 + t);
      for (;;) {
        bool did = false;
        // Victim: the owner at least half of the time, otherwise another thief.
        const int j = static_cast<int>(rng() % (2 * thieves));
        local_queue<item, C>& victim = (j >= thieves || j == t) ? owner_q : ts[j]->q;
        if (item* p = victim.steal_into(me.q)) {
          ++me.steals;
          consume(p);
          ++me.consumed;
          did = true;
        }
        const uint32_t pops = rng() % 4;
        for (uint32_t k = 0; k < pops; ++k) {
          item* p = me.q.pop();
          if (p == nullptr) break;
          consume(p);
          ++me.consumed;
          did = true;
        }
        if (!did) {
          if (done.load(std::memory_order_relaxed)) {
            while (item* p = me.q.pop()) {
              consume(p);
              ++me.consumed;
            }
            return;
          }
          std::this_thread::yield();
        }
      }
    });
  }

  auto sink = [&](item** v, uint32_t k) {
    ++overflow_calls;
    for (uint32_t i = 0; i < k; ++i) consume(v[i]);
  };
  std::minstd_rand rng(99);
  uint32_t next = 0;
  uint32_t rounds = 0;
  while (next < n) {
    // On an oversubscribed machine, let the thieves run now and then — but
    // rarely: beside CPU hogs each yield can cost a whole time slice. One
    // every 16 rounds: 8-16 s for 10M items beside two `yes` hogs (563 s
    // beside three and four builds); one every 1,024: 0.7-3.9 s.
    if ((++rounds & 1023) == 0) std::this_thread::yield();
    const uint32_t pushes = 1 + rng() % 8;
    for (uint32_t k = 0; k < pushes && next < n; ++k, ++next) {
      items[next].payload = next * 2654435761u + 1;  // plain write, published by push (P)
      owner_q.push_back_or_overflow(&items[next], sink);
    }
    const uint32_t pops = rng() % 8;
    for (uint32_t k = 0; k < pops; ++k) {
      item* p = owner_q.pop();
      if (p == nullptr) break;
      ++owner_pops;
      consume(p);
    }
  }
  while (item* p = owner_q.pop()) consume(p);
  done.store(true, std::memory_order_relaxed);
  for (auto& th : threads) th.join();

  uint64_t steals = 0, by_thieves = 0;
  for (auto& s : ts) {
    steals += s->steals;
    by_thieves += s->consumed;
  }
  INFO("n " << n << ", thieves " << thieves << ", steals " << steals << ", items run by thieves " << by_thieves
            << ", overflow batches " << overflow_calls << ", owner pops " << owner_pops);
#ifdef HERD_LOCAL_QUEUE_TEST_VERBOSE
  WARN("n " << n << ", thieves " << thieves << ", steals " << steals << ", items run by thieves " << by_thieves
            << ", overflow batches " << overflow_calls << ", owner pops " << owner_pops);
#endif
  REQUIRE(bad_payloads.load() == 0);
  REQUIRE(duplicates.load() == 0);
  uint32_t missing = 0;
  for (uint32_t i = 0; i < n; ++i) missing += seen[i].load(std::memory_order_relaxed) == 0;
  REQUIRE(missing == 0);
  if (thieves > 0) CHECK(steals > 0);
  for (auto& s : ts) REQUIRE(s->q.pop() == nullptr);
  REQUIRE(owner_q.pop() == nullptr);
}

constexpr uint32_t k_stress_items = k_tsan ? 2'000'000 : 10'000'000;

}  // namespace

TEST_CASE("local_queue: stress, owner pushes and pops while 1 thief steals - every item seen exactly once",
          "[local_queue][stress]") {
  stress<256>(k_stress_items, 1, 0);
}

TEST_CASE("local_queue: stress, owner pushes and pops while 3 thieves steal from it and each other",
          "[local_queue][stress]") {
  stress<256>(k_stress_items, 3, 0);
}

TEST_CASE("local_queue: stress across the u32 index wrap", "[local_queue][stress]") {
  // The owner's counters cross UINT32_MAX early in the run.
  stress<256>(k_stress_items / 4, 3, UINT32_MAX - 1000);
}

TEST_CASE("local_queue: stress with a tiny queue (constant overflow and contention)", "[local_queue][stress]") {
  stress<8>(k_stress_items / 4, 3, UINT32_MAX - 50);
}
