// herd::table's operations, case by case as ETS defines them. Each body runs
// as a node's root process (a table needs an owner); results are recorded and
// checked on the test thread (Catch2 is not thread-safe).
#include <herd/tables/table.hpp>

#include "support/node_fixture.hpp"

#include <map>
#include <set>
#include <string>
#include <vector>

using herd::table;
using herd::table_options;
using herd::table_type;
using herd::test::opts;
using herd::test::run_node;

namespace {
struct session {
  uint64_t messages = 0;
  int32_t level = 0;
  std::string user;
  friend bool operator==(const session&, const session&) = default;
};
}  // namespace

TEST_CASE("set: insert replaces, insert_new refuses a present key, lookup, member, erase, take") {
  std::vector<int> seen;
  run_node(opts(2), [&] {
    auto t = *table<int, std::string>::create();
    t.insert(1, "one");
    t.insert(1, "uno");
    seen.push_back(int(t.size()));                          // 1
    seen.push_back(*t.lookup(1) == "uno");                  // 1
    seen.push_back(t.insert_new(1, "eins"));                // 0
    seen.push_back(t.insert_new(2, "two"));                 // 1
    seen.push_back(t.member(2));                            // 1
    seen.push_back(!t.lookup(3).has_value());               // 1
    seen.push_back(int(t.take(2).size()));                  // 1
    seen.push_back(t.member(2));                            // 0
    seen.push_back(int(t.erase(1)));                        // 1
    seen.push_back(int(t.erase(1)));                        // 0
    seen.push_back(int(t.size()));                          // 0
  });
  CHECK(seen == std::vector<int>{1, 1, 0, 1, 1, 1, 1, 0, 1, 0, 0});
}

TEST_CASE("bag keeps distinct objects per key, duplicate_bag keeps every one, erase_object takes equal ones") {
  std::vector<int> seen;
  run_node(opts(1), [&] {
    auto b = *table<int, int>::create({.type = table_type::bag});
    b.insert(1, 10);
    b.insert(1, 10);
    b.insert(1, 11);
    seen.push_back(int(b.lookup_all(1).size()));  // 2
    auto d = *table<int, int>::create({.type = table_type::duplicate_bag});
    d.insert(1, 10);
    d.insert(1, 10);
    d.insert(1, 11);
    seen.push_back(int(d.lookup_all(1).size()));  // 3
    seen.push_back(int(d.erase_object(1, 10)));   // 2
    seen.push_back(int(d.size()));                // 1
    seen.push_back(int(b.insert_new(1, 12)));     // 0: the key has objects
    seen.push_back(int(b.take(1).size()));        // 2
  });
  CHECK(seen == std::vector<int>{2, 3, 2, 1, 0, 2});
}

TEST_CASE("insert of many is all or nothing for insert_new") {
  std::vector<int> seen;
  run_node(opts(2), [&] {
    auto t = *table<int, int>::create({.write_concurrency = true});
    t.insert({{1, 1}, {2, 2}, {3, 3}});
    seen.push_back(int(t.size()));                              // 3
    seen.push_back(t.insert_new({{4, 4}, {5, 5}, {2, 20}}));    // 0: key 2 is there
    seen.push_back(int(t.size()));                              // 3: nothing went in
    seen.push_back(t.insert_new({{4, 4}, {5, 5}}));             // 1
    seen.push_back(int(t.size()));                              // 5
  });
  CHECK(seen == std::vector<int>{3, 0, 3, 1, 5});
}

TEST_CASE("update_counter: with a default, on a field, with ETS's threshold and set value") {
  std::vector<int64_t> seen;
  bool missing_threw = false, bag_threw = false;
  run_node(opts(1), [&] {
    auto c = *table<std::string, int64_t>::create();
    seen.push_back(c.update_counter("hits", 5, 0));   // 5: default 0, then +5
    seen.push_back(c.update_counter("hits", -2));      // 3
    // ETS {Pos, Incr, Threshold, SetValue}: past 4 wraps to 0
    seen.push_back(c.update_counter("hits", herd::counter_step<int64_t>{1, 4, 0}));  // 4
    seen.push_back(c.update_counter("hits", herd::counter_step<int64_t>{1, 4, 0}));  // 0
    // decrementing below the threshold sets the value
    seen.push_back(c.update_counter("hits", herd::counter_step<int64_t>{-1, 0, 9}));  // 9
    try {
      c.update_counter("absent", 1);
    } catch (const herd::table_error&) {
      missing_threw = true;
    }
    auto s = *table<int, session>::create();
    seen.push_back(int64_t(s.update_counter(7, &session::messages, 3, session{0, 0, "ann"})));  // 3
    seen.push_back(s.update_element(7, &session::level, 2));      // 1
    seen.push_back(s.lookup(7)->level);                            // 2
    seen.push_back(s.update_element(8, &session::level, 2));      // 0: no such key
    auto b = *table<int, int>::create({.type = table_type::bag});
    try {
      b.update_counter(1, 1, 0);
    } catch (const herd::table_error&) {
      bag_threw = true;
    }
  });
  CHECK(seen == std::vector<int64_t>{5, 3, 4, 0, 9, 3, 1, 2, 0});
  CHECK(missing_threw);
  CHECK(bag_threw);
}

TEST_CASE("select pages through every match once with its continuation, select_delete and foldl") {
  std::vector<int> page_sizes;
  std::size_t total = 0, distinct = 0, deleted = 0, left = 0;
  int64_t sum = 0;
  run_node(opts(2), [&] {
    auto t = *table<int, int>::create({.write_concurrency = true});
    for (int i = 0; i < 1000; ++i) t.insert(i, i);
    std::set<int> keys;
    auto even = [](int, int v) { return v % 2 == 0; };
    auto p = t.select(even, 100);
    for (;;) {
      page_sizes.push_back(int(p.objects.size()));
      for (auto& o : p.objects) keys.insert(o.first), ++total;
      if (!p.continuation) break;
      p = t.select(even, 100, p.continuation);
    }
    distinct = keys.size();
    deleted = t.select_delete([](int k, int) { return k < 100; });
    left = t.size();
    sum = t.foldl([](int64_t acc, int, int v) { return acc + v; }, int64_t(0));
  });
  REQUIRE(page_sizes.size() >= 5);
  for (std::size_t i = 0; i + 1 < page_sizes.size(); ++i) CHECK(page_sizes[i] == 100);
  CHECK(total == 500);
  CHECK(distinct == 500);
  CHECK(deleted == 100);
  CHECK(left == 900);
  CHECK(sum == 499500 - 4950);
}

TEST_CASE("ordered_set iterates in key order, next and prev answer for an erased key") {
  std::vector<int> order;
  std::vector<int> around;
  run_node(opts(1), [&] {
    auto t = *table<int, int>::create({.type = table_type::ordered_set});
    for (int k : {5, 1, 9, 3, 7}) t.insert(k, k);
    for (auto k = t.first(); k; k = t.next(*k)) order.push_back(*k);
    t.erase(5);
    around.push_back(*t.next(5));  // 7
    around.push_back(*t.prev(5));  // 3
    around.push_back(*t.last());   // 9
    around.push_back(t.next(9).has_value());  // 0
  });
  CHECK(order == std::vector<int>{1, 3, 5, 7, 9});
  CHECK(around == std::vector<int>{7, 3, 9, 0});
}

TEST_CASE("a scan while another process writes sees every key present throughout exactly once") {
  std::size_t short_passes = 0, duplicates = 0, passes = 0;
  run_node(opts(2), [&] {
    auto t = *table<int, int>::create({.access = herd::table_access::public_, .write_concurrency = true});
    // keys < 5000 stay for the whole scan; keys >= 5000 come and go
    for (int i = 0; i < 5000; ++i) t.insert(i, i);
    std::atomic<bool> stop{false};
    herd::pid writer = herd::spawn([t, &stop]() mutable {
      for (int round = 0; !stop.load(); ++round) {
        for (int i = 5000; i < 5200; ++i) t.insert(i + (round % 7) * 1000, i);
        for (int i = 5000; i < 5200; ++i) t.erase(i + (round % 7) * 1000);
        herd::yield();
      }
    });
    auto m = herd::monitor(writer);
    for (int pass = 0; pass < 20; ++pass) {
      std::map<int, int> count;
      for (auto k = t.first(); k; k = t.next(*k)) ++count[*k];
      std::size_t seen = 0;
      for (auto& [k, n] : count) {
        if (n > 1) ++duplicates;
        if (k < 5000) ++seen;
      }
      if (seen != 5000) ++short_passes;
      ++passes;
      herd::yield();
    }
    stop = true;
    herd::receive([&](const herd::down&) {});
    (void)m;
  });
  CHECK(passes == 20);
  CHECK(short_passes == 0);
  CHECK(duplicates == 0);
}

TEST_CASE("memory counts what the table holds: it grows with objects and their strings, and falls back") {
  std::size_t empty = 0, small = 0, big = 0, cleared = 0;
  run_node(opts(1), [&] {
    auto t = *table<int, std::string>::create();
    empty = t.memory();
    for (int i = 0; i < 1000; ++i) t.insert(i, "x");
    small = t.memory();
    for (int i = 0; i < 1000; ++i) t.insert(i, std::string(100, 'y'));
    big = t.memory();
    t.clear();
    cleared = t.memory();
  });
  CHECK(small > empty + 1000 * (sizeof(int) + sizeof(std::string)));
  CHECK(big >= small + 1000 * 100);
  CHECK(cleared < small);
}

TEST_CASE("memory counts a bag key's list of objects, and erase_object and erase give it back") {
  std::size_t empty = 0, one = 0, many = 0, fewer = 0, gone = 0;
  run_node(opts(1), [&] {
    auto d = *table<int, int64_t>::create({.type = table_type::duplicate_bag});
    empty = d.memory();
    d.insert(1, 0);
    one = d.memory();
    for (int64_t i = 1; i < 1000; ++i) d.insert(1, i % 10);
    many = d.memory();
    d.erase_object(1, 3);  // 100 of them; the list keeps its buffer
    fewer = d.memory();
    d.erase(1);
    gone = d.memory();
  });
  CHECK(many >= one + 999 * sizeof(int64_t));
  CHECK(fewer == many);
  CHECK(gone == empty);
}
