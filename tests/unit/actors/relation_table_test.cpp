// The container behind a process's links and monitors (actors/src/
// relation_table.hpp): a set keyed by 64-bit keys, inline while small, an
// open-addressing table beyond. Checked against std::unordered_map through
// growth, churn and shrinking back.
#include "relation_table.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <unordered_map>

namespace {

struct entry {
  uint64_t key;
  uint64_t value;
};
using table = herd::detail::relation_table<entry, 4>;

bool agrees(table& t, const std::unordered_map<uint64_t, uint64_t>& ref) {
  if (t.size() != ref.size()) return false;
  std::size_t seen = 0;
  bool ok = true;
  t.for_each([&](const entry& e) {
    auto it = ref.find(e.key);
    ok = ok && it != ref.end() && it->second == e.value;
    ++seen;
  });
  for (auto& [k, v] : ref) {
    entry* e = t.find(k);
    ok = ok && e && e->value == v;
  }
  return ok && seen == ref.size();
}

}  // namespace

TEST_CASE("relation_table: random inserts and erases agree with a reference map through growth and shrinking",
          "[relations]") {
  std::mt19937_64 rng(20261201);
  table t;
  std::unordered_map<uint64_t, uint64_t> ref;
  int disagreements = 0;
  for (int round = 0; round < 6; ++round) {
    // Key spaces: dense (refs from one block), sparse, and sequential pids.
    uint64_t space = round % 2 ? 50 : 20'000;
    uint64_t base = round % 3 == 2 ? (uint64_t{7} << 32) : uint64_t{1} << 40;
    for (int op = 0; op < 60'000; ++op) {
      uint64_t k = base + rng() % space;
      if (rng() % 3) {
        uint64_t v = rng();
        bool fresh = t.insert(entry{k, v});
        bool want = ref.emplace(k, v).second;
        disagreements += fresh != want;
      } else {
        entry out{};
        bool gone = t.erase(k, &out);
        auto it = ref.find(k);
        disagreements += gone != (it != ref.end());
        if (it != ref.end()) {
          disagreements += out.value != it->second;
          ref.erase(it);
        }
      }
      if (op % 5'000 == 0) disagreements += !agrees(t, ref);
    }
    disagreements += !agrees(t, ref);
    // Take everything out again: the table gives its memory back.
    for (auto it = ref.begin(); it != ref.end(); it = ref.erase(it)) disagreements += !t.erase(it->first);
    CHECK(t.size() == 0);
    CHECK(t.heap_slots() == 0);
  }
  CHECK(disagreements == 0);
}

TEST_CASE("relation_table: a duplicate key is refused and the first entry stays", "[relations]") {
  table t;
  for (uint64_t n : {3u, 40u}) {  // inline, then on the heap
    for (uint64_t k = 0; k < n; ++k) REQUIRE(t.insert(entry{k, k + 100}));
    for (uint64_t k = 0; k < n; ++k) CHECK_FALSE(t.insert(entry{k, 7}));
    CHECK(t.size() == n);
    for (uint64_t k = 0; k < n; ++k) CHECK(t.find(k)->value == k + 100);
    CHECK_FALSE(t.erase(n + 1));
    t.clear();
  }
}

TEST_CASE("relation_table: 100,000 entries are found after a tenth of them came and went many times",
          "[relations]") {
  table t;
  const uint64_t n = 100'000;
  for (uint64_t k = 0; k < n; ++k) REQUIRE(t.insert(entry{k << 20, k}));  // refs of different blocks
  uint32_t slots_full = t.heap_slots();
  for (int rep = 0; rep < 20; ++rep)
    for (uint64_t k = rep; k < n; k += 10) {
      REQUIRE(t.erase(k << 20));
      REQUIRE(t.insert(entry{k << 20, k + 1}));
    }
  CHECK(t.size() == n);
  CHECK(t.heap_slots() == slots_full);  // churn at a steady size does not grow the table
  uint64_t found = 0;
  for (uint64_t k = 0; k < n; ++k) found += t.find(k << 20) != nullptr;
  CHECK(found == n);
  for (uint64_t k = 0; k < n - 3; ++k) REQUIRE(t.erase(k << 20));
  CHECK(t.size() == 3);
  CHECK(t.heap_slots() <= 16);
}
