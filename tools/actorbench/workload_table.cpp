// actorbench table MIX [--procs P] [--keys K] [--ops N] [--type set|ordered_set] [--workers W]
//
// The ETS contention benchmark (issue 16): a table pre-filled with K entries
// (a 64-bit key, a value of two 64-bit integers), P processes sharing N
// operations on random keys:
//   read90          90% lookup, 10% insert (overwrite)
//   write50         50% lookup, 50% insert
//   counter         update_counter on one hot key by every process
//   counter_spread  update_counter on random keys
// bytes_per_entry is table::memory() after the fill, divided by K (the BEAM
// peer reports ets:info(T, memory) the same way).
#include "workloads.hpp"

#include <herd/actors.hpp>
#include <herd/tables/table.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace actorbench {
namespace {

struct pair64 {
  uint64_t a = 0, b = 0;
};
struct done {
  uint64_t checksum;
};

enum class mix { read90, write50, counter, counter_spread };

struct table_config {
  mix m = mix::read90;
  std::string mix_name, type_name = "set";
  uint64_t procs = 1000, keys = 100000, ops = 10000000;
  unsigned workers = 2;
};

int usage(const char* why) {
  std::fprintf(stderr,
               "actorbench table: %s\n"
               "usage: actorbench table read90|write50|counter|counter_spread [--procs P] [--keys K] [--ops N]\n"
               "                        [--type set|ordered_set] [--workers W]\n",
               why);
  return 2;
}

bool positive(const char* s, uint64_t& out) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (errno || !end || *end || s[0] == '-' || v == 0) return false;
  out = v;
  return true;
}

// xorshift64*: a few cycles, so the figure is the table's, not the RNG's.
uint64_t next_random(uint64_t& s) {
  s ^= s >> 12;
  s ^= s << 25;
  s ^= s >> 27;
  return s * 2685821657736338717ull;
}

void worker(herd::table<uint64_t, pair64> t, const table_config& c, uint64_t n, uint64_t seed, herd::pid parent) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1, sum = 0;
  for (uint64_t j = 0; j < n; ++j) {
    uint64_t r = next_random(s);
    uint64_t key = r % c.keys;
    unsigned pct = unsigned((r >> 40) % 100);
    switch (c.m) {
      case mix::read90:
      case mix::write50:
        if (pct < (c.m == mix::read90 ? 90u : 50u)) {
          if (auto v = t.lookup(key)) sum += v->a;
        } else {
          t.insert(key, pair64{j, j});
        }
        break;
      case mix::counter:
        sum += t.update_counter(0, &pair64::a, 1, pair64{});
        break;
      case mix::counter_spread:
        sum += t.update_counter(key, &pair64::a, 1, pair64{});
        break;
    }
  }
  herd::send(parent, done{sum});
}

}  // namespace

int run_table(int argc, char** argv) {
  table_config c;
  if (argc < 3) return usage("no mix given");
  c.mix_name = argv[2];
  if (c.mix_name == "read90") c.m = mix::read90;
  else if (c.mix_name == "write50") c.m = mix::write50;
  else if (c.mix_name == "counter") c.m = mix::counter;
  else if (c.mix_name == "counter_spread") c.m = mix::counter_spread;
  else return usage(("unknown mix '" + c.mix_name + "'").c_str());
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return usage(("no value after " + a).c_str());
    const char* v = argv[++i];
    uint64_t x = 0;
    if (a == "--type") {
      c.type_name = v;
      if (c.type_name != "set" && c.type_name != "ordered_set") return usage("--type is set or ordered_set");
    } else if (!positive(v, x)) {
      return usage(("bad value for " + a).c_str());
    } else if (a == "--procs") {
      c.procs = x;
    } else if (a == "--keys") {
      c.keys = x;
    } else if (a == "--ops") {
      c.ops = x;
    } else if (a == "--workers" && x <= 256) {
      c.workers = unsigned(x);
    } else {
      return usage(("unknown option " + a).c_str());
    }
  }
  herd::node n({.workers = c.workers, .max_actors = size_t(c.procs) + 1024});
  herd::exit_reason r = n.run([&] {
    auto t = *herd::table<uint64_t, pair64>::create(
        {.type = c.type_name == "set" ? herd::table_type::set : herd::table_type::ordered_set,
         .access = herd::table_access::public_,
         .read_concurrency = true,
         .write_concurrency = true});
    for (uint64_t k = 0; k < c.keys; ++k) t.insert(k, pair64{k, k});
    double bytes = double(t.memory()) / double(c.keys);
    uint64_t per = c.ops / c.procs;
    auto t0 = std::chrono::steady_clock::now();
    herd::pid me = herd::self();
    for (uint64_t i = 0; i < c.procs; ++i) herd::spawn(worker, t, std::cref(c), per, i + 1, me);
    uint64_t check = 0;
    for (uint64_t i = 0; i < c.procs; ++i) herd::receive([&](done d) { check += d.checksum; });
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    uint64_t total = per * c.procs;
    std::printf("RESULT impl=herd workload=table mix=%s type=%s procs=%llu keys=%llu ops=%llu wall_ms=%.1f "
                "ops_per_s=%.0f bytes_per_entry=%.1f workers=%u checksum=%llu\n",
                c.mix_name.c_str(), c.type_name.c_str(), (unsigned long long)c.procs, (unsigned long long)c.keys,
                (unsigned long long)total, ms, double(total) / ms * 1000.0, bytes, c.workers,
                (unsigned long long)check);
  });
  std::fflush(stdout);
  return r.is_normal() ? 0 : 1;
}

}  // namespace actorbench
