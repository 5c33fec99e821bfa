// The hash stripe of set and bag tables (detail/sorted_hash.hpp) against a
// std::map ordered by (h, k): after random inserts, erases, growth and
// shrinking, walking it must give exactly the map's objects in the map's
// order, and find / lower_bound / upper_bound must agree with the map's. The
// hashes are chosen by the test to force what a good hash rarely does: equal
// hashes, long runs, runs that spill past the last home slot.
#include <herd/tables/detail/sorted_hash.hpp>
#include <herd/tables/table.hpp>

#include "support/node_fixture.hpp"

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace td = herd::tables::detail;

namespace {

uint64_t next_random(uint64_t& s) {
  s ^= s >> 12;
  s ^= s << 25;
  s ^= s >> 27;
  return s * 2685821657736338717ull;
}

constexpr unsigned shift = 3;                 // as a table of 8 stripes
constexpr uint64_t stripe_top = 5ull << 61;  // every hash here is in stripe 5

// A stripe and its reference, mutated together and compared whole.
template <class K, class M>
struct pair_under_test {
  using map_t = td::sorted_hash<K, M, td::counting_allocator<std::pair<const td::pos<K>, M>>>;
  int64_t bytes = 0;
  map_t h{td::counting_allocator<std::pair<const td::pos<K>, M>>(&bytes)};
  std::map<std::pair<uint64_t, K>, M> ref;

  pair_under_test() { h.set_shift(shift); }

  void insert(uint64_t hash, const K& k, const M& v) {
    auto [it, fresh] = h.emplace(td::pos<K>{hash, k}, v);
    bool ref_fresh = ref.emplace(std::pair{hash, k}, v).second;
    REQUIRE(fresh == ref_fresh);
    REQUIRE(it->first.k == k);
  }
  void erase(uint64_t hash, const K& k) {
    auto it = h.find(td::pos_ref<K>{hash, &k});
    bool there = ref.erase(std::pair{hash, k}) == 1;
    REQUIRE((it != h.end()) == there);
    if (there) h.erase(it);
  }
  // Whole-structure comparison: order, contents, and the bounds of probes.
  void check(const std::vector<std::pair<uint64_t, K>>& probes) {
    REQUIRE(h.size() == ref.size());
    auto r = ref.begin();
    for (auto it = h.begin(); it != h.end(); ++it, ++r) {
      REQUIRE(r != ref.end());
      REQUIRE(it->first.k == r->first.second);
      REQUIRE(it->second == r->second);
    }
    REQUIRE(r == ref.end());
    const map_t& c = h;
    for (auto& [ph, pk] : probes) {
      td::pos_ref<K> x{ph, &pk};
      auto f = c.find(x);
      auto rf = ref.find({ph, pk});
      REQUIRE((f != c.end()) == (rf != ref.end()));
      if (f != c.end()) REQUIRE(f->second == rf->second);
      auto lb = c.lower_bound(x);
      auto rlb = ref.lower_bound({ph, pk});
      REQUIRE((lb == c.end()) == (rlb == ref.end()));
      if (rlb != ref.end()) REQUIRE(lb->first.k == rlb->first.second);
      if (rlb != ref.begin()) REQUIRE(std::prev(lb)->first.k == std::prev(rlb)->first.second);
      auto ub = c.upper_bound(x);
      auto rub = ref.upper_bound({ph, pk});
      REQUIRE((ub == c.end()) == (rub == ref.end()));
      if (rub != ref.end()) REQUIRE(ub->first.k == rub->first.second);
    }
  }
};

// A hash in stripe 5 with its low bit set. The variety (r's low `spread`
// bits) goes in the top of the 61 bits below the stripe's, so small spreads
// give equal hashes; high_end puts every home in the last sixteenth of the
// slots, so runs spill into the tail.
uint64_t make_hash(uint64_t r, unsigned spread, bool high_end) {
  uint64_t below = (r & ((uint64_t(1) << spread) - 1)) << (61 - spread);
  if (high_end) below = (uint64_t(0xF) << 57) | (below >> 4);
  return stripe_top | below | 1;
}

}  // namespace

TEST_CASE("a hash stripe keeps (h, k) order through random inserts, erases, growth and shrinking") {
  // spread 61: hashes as a good hash gives them; 6 and 4: 61 and 16
  // distinct hashes, so many equal ones ordered by key; high_end: runs spill
  // into the tail and past it.
  struct shape {
    unsigned spread;
    bool high_end;
  };
  for (shape sh : {shape{61, false}, shape{6, false}, shape{61, true}, shape{4, true}}) {
    INFO("spread " << sh.spread << " high_end " << sh.high_end);
    auto hash_of = [&](uint64_t k) {
      return make_hash(sh.spread > 10 ? k * 0x9E3779B97F4A7C15ull : k % 61, sh.spread, sh.high_end);
    };
    pair_under_test<uint64_t, uint64_t> t;
    uint64_t s = 99 + sh.spread;
    std::vector<std::pair<uint64_t, uint64_t>> probes;
    // grow to a couple of thousand, then mostly erase (shrinks), then grow again
    for (int phase = 0; phase < 3; ++phase) {
      unsigned insert_pct = phase == 1 ? 25 : 75;
      for (int step = 0; step < 4000; ++step) {
        uint64_t r = next_random(s), k = r % 3000;
        if ((r >> 40) % 100 < insert_pct)
          t.insert(hash_of(k), k, r);
        else
          t.erase(hash_of(k), k);
        if (step % 500 == 0) {
          probes.clear();
          for (int p = 0; p < 200; ++p) {
            uint64_t pk = next_random(s) % 3100;
            probes.emplace_back(hash_of(pk), pk);
          }
          t.check(probes);
        }
      }
      t.check(probes);
    }
    // every object out one by one: the array is freed, the bytes are 0
    while (!t.ref.empty()) {
      auto [hk, v] = *t.ref.begin();
      t.erase(hk.first, hk.second);
    }
    CHECK(t.h.size() == 0);
    CHECK(t.h.slot_count() == 0);
    CHECK(t.bytes == 0);
  }
}

TEST_CASE("a hash stripe of strings moves them safely on shifts and growth and frees every byte") {
  // std::string is not trivially copyable: objects move one by one (under
  // ASan a double destroy or a lost buffer shows).
  pair_under_test<std::string, std::string> t;
  uint64_t s = 7;
  std::vector<std::pair<uint64_t, std::string>> probes;
  for (int step = 0; step < 6000; ++step) {
    uint64_t r = next_random(s), k = r % 1500;
    std::string key = "key-" + std::to_string(k) + std::string(k % 3 ? 0 : 30, 'k');
    uint64_t h = make_hash(k % 97, 8, k % 2 == 0);
    if ((r >> 40) % 100 < (step < 3000 ? 70u : 30u))
      t.insert(h, key, std::string(r % 40, 'v'));
    else
      t.erase(h, key);
    if (step % 1000 == 999) {
      probes.clear();
      for (uint64_t p = 0; p < 100; ++p) {
        uint64_t pk = next_random(s) % 1600;
        probes.emplace_back(make_hash(pk % 97, 8, pk % 2 == 0), "key-" + std::to_string(pk) +
                                                                   std::string(pk % 3 ? 0 : 30, 'k'));
      }
      t.check(probes);
    }
  }
  t.h.clear();
  CHECK(t.h.size() == 0);
  CHECK(t.bytes == 0);
}

TEST_CASE("bags keep each key's objects in insertion order while other keys shift and the table grows") {
  std::vector<int> dup_order, bag_order;
  std::size_t empty = 0, after = 0, size_after = 1;
  herd::test::run_node(herd::test::opts(1), [&] {
    auto d = *herd::table<int, std::string>::create({.type = herd::table_type::duplicate_bag});
    auto b = *herd::table<int, std::string>::create({.type = herd::table_type::bag});
    empty = d.memory();
    // key 42's objects go in between thousands of other keys' inserts and
    // erases, which shift and regrow the stripe under them
    for (int i = 0; i < 5000; ++i) {
      d.insert(i % 1000 + 100, std::string(i % 50, 'x'));
      b.insert(i % 1000 + 100, "o");
      if (i % 250 == 0) {
        d.insert(42, std::to_string(i / 250));
        d.insert(42, std::to_string(i / 250));  // a duplicate stays in a duplicate_bag
        b.insert(42, std::to_string(i / 250));
        b.insert(42, std::to_string(i / 250));  // ...and not in a bag
      }
      if (i % 3 == 0) d.erase(i % 1000 + 100);
    }
    for (auto& v : d.lookup_all(42)) dup_order.push_back(std::stoi(v));
    for (auto& v : b.lookup_all(42)) bag_order.push_back(std::stoi(v));
    for (int k = 0; k < 1200; ++k) d.erase(k);
    size_after = d.size();
    after = d.memory();
  });
  std::vector<int> want_dup, want_bag;
  for (int i = 0; i < 20; ++i) want_dup.insert(want_dup.end(), {i, i}), want_bag.push_back(i);
  CHECK(dup_order == want_dup);
  CHECK(bag_order == want_bag);
  CHECK(size_after == 0);
  CHECK(after == empty);
}

TEST_CASE("set tables answer last and prev in hash order, for present and erased keys") {
  std::vector<int> forward, backward;
  int prev_of_erased = -1, next_of_erased = -1, erased = -1;
  herd::test::run_node(herd::test::opts(1), [&] {
    auto t = *herd::table<int, int>::create({.write_concurrency = true});
    for (int i = 0; i < 2000; ++i) t.insert(i, i);
    for (auto k = t.first(); k; k = t.next(*k)) forward.push_back(*k);
    for (auto k = t.last(); k; k = t.prev(*k)) backward.push_back(*k);
    erased = forward[1000];
    t.erase(erased);
    prev_of_erased = *t.prev(erased);
    next_of_erased = *t.next(erased);
  });
  REQUIRE(forward.size() == 2000);
  CHECK(std::vector<int>(backward.rbegin(), backward.rend()) == forward);
  CHECK(prev_of_erased == forward[999]);
  CHECK(next_of_erased == forward[1001]);
  (void)erased;
}

TEST_CASE("a scan of a bag while another process writes and regrows it sees every key present throughout exactly once") {
  std::size_t short_passes = 0, duplicates = 0, passes = 0;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto t = *herd::table<int, int>::create({.type = herd::table_type::duplicate_bag,
                                             .access = herd::table_access::public_});
    // one stripe; keys < 2000 stay, the writer's keys come and go in bulk, so
    // the stripe grows and shrinks under the scans
    for (int i = 0; i < 2000; ++i) t.insert(i, i), t.insert(i, -i);
    std::atomic<bool> stop{false};
    std::atomic<int> rounds{0};
    herd::pid writer = herd::spawn([t, &stop, &rounds]() mutable {
      while (!stop.load()) {
        for (int i = 10000; i < 14000; ++i) t.insert(i, i);
        for (int i = 10000; i < 14000; ++i) t.erase(i);
        ++rounds;
        herd::yield();
      }
    });
    auto m = herd::monitor(writer);
    // at least 10 passes, and on until the writer has regrown the stripe a few times
    for (int pass = 0; pass < 10 || rounds.load() < 3; ++pass) {
      std::map<int, int> count;
      for (auto k = t.first(); k; k = t.next(*k)) ++count[*k];
      std::size_t seen = 0;
      for (auto& [k, n] : count) {
        if (n > 1) ++duplicates;
        if (k < 2000) ++seen;
      }
      if (seen != 2000) ++short_passes;
      ++passes;
      herd::yield();
    }
    stop = true;
    herd::receive([&](const herd::down&) {});
    (void)m;
  });
  CHECK(passes >= 10);
  CHECK(short_passes == 0);
  CHECK(duplicates == 0);
}
