// Many processes on every worker mixing every operation while others kill
// them at random; afterwards the table's own accounts must agree with what a
// scan finds, and the tables of killed owners must be gone (or with their
// heir). Sized by HERD_TEST_SCALE (small under the sanitizers).
#include <herd/tables/table.hpp>

#include "support/node_fixture.hpp"

#include <map>
#include <string>
#include <vector>

using herd::table;
using herd::test::opts;
using herd::test::run_node;
using herd::test::scaled;

namespace {
using strings = table<uint64_t, std::string>;
using counters = table<uint64_t, int64_t>;

struct go_on {};

uint64_t next_random(uint64_t& s) {
  s ^= s >> 12;
  s ^= s << 25;
  s ^= s >> 27;
  return s * 2685821657736338717ull;
}

// One process's share: `ops` random operations on the shared tables, and
// now and then a table of its own (private; every other one with the root as
// its heir) that dies with it unless the root inherits it.
void mixer(strings t, counters c, uint64_t seed, uint64_t ops, uint64_t keys) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 7;
  std::optional<strings> mine;
  for (uint64_t j = 0; j < ops; ++j) {
    uint64_t r = next_random(s), k = r % keys;
    switch ((r >> 32) % 14) {
      case 0: t.insert(k, std::string((r >> 8) % 64, 'a')); break;
      case 1: (void)t.insert_new(k, "new"); break;
      case 2: t.insert({{k, "x"}, {(k + 1) % keys, std::string(40, 'y')}, {(k + 7) % keys, "z"}}); break;
      case 3: (void)t.lookup(k); break;
      case 4: (void)t.member(k); break;
      case 5: t.erase(k); break;
      case 6: t.erase_object(k, "x"); break;
      case 7: (void)t.take(k); break;
      case 8: c.update_counter(k % 64, 1, int64_t(0)); break;
      case 9: {
        auto p = t.select([](uint64_t key, const std::string&) { return key % 3 == 0; }, 20);
        if (p.continuation) (void)t.select([](uint64_t, const std::string&) { return true; }, 5, p.continuation);
        break;
      }
      case 10: t.select_delete([k](uint64_t key, const std::string& v) { return key == k && v.size() > 30; }); break;
      case 11: {
        auto key = t.next(k);
        for (int n = 0; key && n < 10; ++n) key = t.next(*key);
        break;
      }
      case 12:
        if (!mine) {
          herd::table_options o{.access = herd::table_access::private_};
          if (seed % 2) o.heir = herd::parent();
          mine = *strings::create(std::move(o));
        }
        mine->insert(k, std::string(100, 'm'));
        break;
      default: (void)t.foldl([](std::size_t n, uint64_t, const std::string&) { return n + 1; }, std::size_t(0)); break;
    }
    if (j % 64 == 0) herd::yield();  // a point where a kill can land
  }
}
}  // namespace

TEST_CASE("stress: processes mix every table operation while others are killed, the accounts still agree") {
  const bool ordered = GENERATE(false, true);
  const uint64_t procs = scaled(1000, 100), ops = scaled(400, 100), keys = 2000;
  std::size_t size = 0, scanned = 0, selected = 0, folded = 0, dup = 0, tables_left = 0, inherited = 0;
  std::size_t mem_empty = 0, mem_cleared = 0, killed = 0;
  run_node(opts(2), [&] {
    herd::table_options o{.type = ordered ? herd::table_type::ordered_set : herd::table_type::set,
                          .access = herd::table_access::public_, .write_concurrency = true};
    auto t = *strings::create(o);
    auto c = *counters::create({.access = herd::table_access::public_, .write_concurrency = true});
    mem_empty = t.memory();
    std::size_t tables_before = herd::tables::detail::list().size();
    std::vector<herd::pid> ps;
    for (uint64_t i = 0; i < procs; ++i) ps.push_back(herd::spawn(mixer, t, c, i + 1, ops, keys));
    std::vector<herd::monitor_ref> ms;
    for (herd::pid p : ps) ms.push_back(herd::monitor(p));
    uint64_t s = 12345;
    for (uint64_t i = 0; i < procs / 3; ++i) {
      herd::exit(ps[next_random(s) % ps.size()], herd::exit_reason::kill());
      herd::yield();
    }
    for (uint64_t i = 0; i < procs; ++i)
      herd::receive([&](const herd::down& d) { killed += d.reason.kind() == herd::exit_kind::killed; });
    // Inherited tables arrive as messages; count them, then delete them.
    for (;;) {
      bool got = herd::receive(
          [&](herd::table_transfer<uint64_t, std::string>& tr) {
            ++inherited;
            tr.table.destroy();
            return true;
          },
          herd::after(std::chrono::milliseconds(0), [] { return false; }));
      if (!got) break;
    }
    tables_left = herd::tables::detail::list().size() - tables_before;
    size = t.size();
    std::map<uint64_t, int> seen;
    for (auto k = t.first(); k; k = t.next(*k)) ++seen[*k];
    scanned = seen.size();
    for (auto& [k, n] : seen) dup += n > 1;
    selected = t.select([](uint64_t, const std::string&) { return true; }).size();
    folded = t.foldl([](std::size_t n, uint64_t, const std::string&) { return n + 1; }, std::size_t(0));
    // Erasing one by one (not clear, which resets the accounts) must bring the
    // heap accounting back to zero if no operation above miscounted.
    for (auto& [k, n] : seen) t.erase(k);
    mem_cleared = t.memory();
  });
  INFO("ordered_set: " << ordered << ", killed: " << killed << ", inherited: " << inherited);
  CHECK(size == scanned);
  CHECK(size == selected);
  CHECK(size == folded);
  CHECK(dup == 0);
  CHECK(tables_left == 0);
  CHECK(mem_cleared == mem_empty);
}
