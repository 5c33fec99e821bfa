// Stack memory: arena layout, guards, pools, trimming, the overflow report, start-up checks.
// Guard faults are checked in a subprocess (tests/fixtures/stack_overflow_probe.cpp), never in
// this process. Build the probe with -fstack-clash-protection; point HERD_STACK_OVERFLOW_PROBE
// at it (compile definition or environment), else it is looked for next to this binary.
#include <herd/runtime/sanitizers.hpp>
#include "context/overflow_handler.hpp"
#include "context/stack_allocator.hpp"
#include "context/stack_pool.hpp"
#include "startup_checks.hpp"
#include "support/skip.hpp"
#include "support/subprocess.hpp"

#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace herd::rt;

namespace {

#if HERD_ASAN
constexpr bool asan = true;
#else
constexpr bool asan = false;
#endif
#if HERD_TSAN
constexpr bool tsan = true;
#else
constexpr bool tsan = false;
#endif
constexpr size_t page = 4096;

// ASan frames are larger and its redzones can straddle a single page: use a 16-page guard.
stack_options test_options(guard_kind guard = detect_guard_kind()) {
  stack_options o;
  o.guard = guard;
  o.guard_size = asan ? 16 * page : page;
  o.chunk_slots = 64;
  return o;
}

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_minflt;
}

size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * page;
}

size_t mapping_count() {
  std::ifstream maps("/proc/self/maps");
  return size_t(std::count(std::istreambuf_iterator<char>(maps), std::istreambuf_iterator<char>(), '\n'));
}

std::string probe_path() {
#ifdef HERD_STACK_OVERFLOW_PROBE
  return HERD_STACK_OVERFLOW_PROBE;
#else
  if (const char* env = std::getenv("HERD_STACK_OVERFLOW_PROBE")) return env;
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string dir = n > 0 ? std::string(self, size_t(n)) : std::string("./x");
  return dir.substr(0, dir.rfind('/') + 1) + "stack_overflow_probe";
#endif
}

herd::test::subprocess_result run_probe(std::vector<std::string> args) {
  args.insert(args.begin(), probe_path());
  if (asan) args.insert(args.end(), {"--guard-pages", "16"});
  herd::test::subprocess_options options;
  options.timeout = std::chrono::seconds(60);
  if (asan) options.env.push_back("ASAN_OPTIONS=handle_segv=0:detect_leaks=0");
  return herd::test::run_subprocess(args, options);
}

uintptr_t hex_after(const std::string& text, const std::string& marker) {
  size_t at = text.find(marker);
  if (at == std::string::npos) return 0;
  return std::strtoull(text.c_str() + at + marker.size(), nullptr, 16);
}

// The probe died of SIGABRT after one report line naming the actor, and the fault lay in the
// guard the line names.
void check_overflow_report(const herd::test::subprocess_result& r) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err << "\nspawn: " << r.spawn_error);
  REQUIRE(r.started);
  CHECK(r.signal == SIGABRT);
  CHECK(r.err.find("herd: stack overflow in actor <1.0> name=probe: stack 65536 bytes, fault at 0x") != std::string::npos);
  const uintptr_t fault = hex_after(r.err, "fault at ");
  const uintptr_t lo = hex_after(r.err, ", guard ");
  const size_t dash = r.err.find('-', r.err.find(", guard "));
  const uintptr_t hi = dash == std::string::npos ? 0 : std::strtoull(r.err.c_str() + dash + 1, nullptr, 16);
  CHECK(lo < hi);
  CHECK(hi - lo == (asan ? 16 : 1) * page);
  CHECK(fault >= lo);
  CHECK(fault < hi);
}

}  // namespace

TEST_CASE("a requested size rounds up to a power-of-two class from 16 KiB to 64 MiB", "[stack]") {
  CHECK(class_for(0) == 0);
  CHECK(class_for(1) == 0);
  CHECK(class_for(16 * 1024) == 0);
  CHECK(class_for(16 * 1024 + 1) == 1);
  CHECK(class_for(64 * 1024) == 2);
  CHECK(class_for(100'000) == 3);
  CHECK(class_for(max_stack_size) == stack_class_count - 1);
  CHECK(class_for(max_stack_size + 1) == no_stack_class);
  CHECK(class_size(class_for(100'000)) == 128 * 1024);
  CHECK(stack_allocator(stack_options{100'000}).default_class() == 3);
  CHECK_THROWS(stack_allocator(stack_options{max_stack_size + 1}));

  stack_allocator allocator(test_options());
  std::string error;
  CHECK(allocator.carve(stack_class_count, &error) == nullptr);
  CHECK(error.rfind("herd: ", 0) == 0);
}

TEST_CASE("carve gives page-aligned, non-overlapping slots of the requested class", "[stack]") {
  stack_allocator allocator(test_options());
  const size_t guard = allocator.options().guard_size;
  std::vector<stack_slot*> slots;
  for (int i = 0; i < 200; ++i) slots.push_back(allocator.carve(2, nullptr));  // four 64-slot chunks
  for (int i = 0; i < 10; ++i) slots.push_back(allocator.carve(0, nullptr));
  for (stack_slot* s : slots) {
    REQUIRE(s != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(s->hi) % page == 0);
    CHECK(reinterpret_cast<uintptr_t>(s->lo) % page == 0);
    CHECK(s->size() == class_size(s->class_index));
    CHECK(s->tsan_fiber == nullptr);
    CHECK(s->clean);
  }
  CHECK(slots[0]->class_index == 2);
  CHECK(slots.back()->class_index == 0);
  std::sort(slots.begin(), slots.end(), [](auto* a, auto* b) { return a->lo < b->lo; });
  for (size_t i = 1; i < slots.size(); ++i) CHECK(slots[i - 1]->hi <= slots[i]->lo - guard);  // guards included

  const stack_allocator_stats st = allocator.stats();
  CHECK(st.slots_carved == 210);
  CHECK(st.chunks == 5);
  CHECK(st.bytes_reserved == 4 * 64 * (64 * 1024 + guard) + 64 * (16 * 1024 + guard));
  CHECK(st.slots_in_use == 210);
  CHECK(st.guard == allocator.guard());
}

TEST_CASE("the whole usable range of a slot can be written, in every class tried", "[stack]") {
  stack_allocator allocator(test_options());
  for (uint32_t cls : {0u, 2u, 6u}) {
    stack_slot* s = allocator.carve(cls, nullptr);
    REQUIRE(s != nullptr);
    std::memset(s->lo, 0x5a, s->size());
    CHECK(s->lo[0] == 0x5a);
    CHECK(s->hi[-1] == 0x5a);
  }
}

TEST_CASE("contains_guard is exact at the guard's edges and ignores uncarved slots", "[stack]") {
  stack_allocator allocator(test_options());
  const size_t guard = allocator.options().guard_size;
  stack_slot* s0 = allocator.carve(0, nullptr);
  stack_slot* s1 = allocator.carve(0, nullptr);
  REQUIRE(s1->lo - guard == s0->hi);  // adjacent in their chunk
  const stack_slot* found = nullptr;
  CHECK(allocator.contains_guard(s1->lo - guard, &found));
  CHECK(found == s1);
  CHECK(allocator.contains_guard(s1->lo - 1, &found));
  CHECK(found == s1);
  CHECK_FALSE(allocator.contains_guard(s1->lo, &found));
  CHECK_FALSE(allocator.contains_guard(s0->hi - 1, &found));
  CHECK(allocator.contains_guard(s0->lo - 1, &found));
  CHECK(found == s0);
  CHECK_FALSE(allocator.contains_guard(s0->lo - guard - 1, &found));  // below the chunk
  CHECK_FALSE(allocator.contains_guard(s1->hi, &found));              // the next slot is not carved yet
  stack_slot* s2 = allocator.carve(0, nullptr);
  CHECK(allocator.contains_guard(s1->hi, &found));
  CHECK(found == s2);
  CHECK_FALSE(allocator.contains_guard(nullptr, &found));
}

TEST_CASE("a released stack is the next one acquired", "[stack]") {
  stack_allocator allocator(test_options());
  stack_pool pool(allocator);
  stack_slot* a = pool.acquire(2, nullptr);
  stack_slot* b = pool.acquire(2, nullptr);
  pool.release(a, 0);
  pool.release(b, 0);
  CHECK(pool.acquire(2, nullptr) == b);  // LIFO: the hottest first
  CHECK(pool.acquire(2, nullptr) == a);
  CHECK(pool.stats().carved == 2);
  CHECK(allocator.stats().slots_in_use == 2);
}

TEST_CASE("a steady-state acquire/write/release loop carves nothing and takes no page fault", "[stack]") {
  stack_allocator allocator(test_options());
  stack_pool pool(allocator);
  stack_slot* warm = pool.acquire(allocator.default_class(), nullptr);
  warm->hi[-64] = 1;
  pool.release(warm, 0);
  const long faults = minor_faults();
  const uint64_t chunks = allocator.stats().chunks;
  const auto start = std::chrono::steady_clock::now();
  bool same = true;
  for (uint64_t i = 0; i < 100'000; ++i) {
    stack_slot* s = pool.acquire(allocator.default_class(), nullptr);
    same &= s == warm;
    s->hi[-64] = char(i);  // the top page, where a fiber's first frames live
    pool.release(s, i / 10);
  }
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / 100'000;
  CHECK(same);
  // Under sanitizers the loop also touches fresh shadow memory.
  CHECK(minor_faults() - faults <= ((asan || tsan) ? 64 : 2));
  CHECK(pool.stats().carved == 1);
  CHECK(allocator.stats().chunks == chunks);
  // The figure, not a claim: no syscall and no fault per iteration is what the checks above hold.
  WARN("acquire + write + release: " << ns << " ns");
}

// A burst: n default-class stacks taken, every byte written, all given back at t=0.
void release_dirty_burst(stack_pool& pool, stack_allocator& allocator, int n) {
  std::vector<stack_slot*> held;
  for (int i = 0; i < n; ++i) {
    held.push_back(pool.acquire(allocator.default_class(), nullptr));
    std::memset(held.back()->lo, 1, held.back()->size());
  }
  for (stack_slot* s : held) pool.release(s, 0);
}

TEST_CASE("a lone pool keeps max(min_bound, recent peak) free stacks and hands the rest to the surplus", "[stack]") {
  stack_allocator allocator(test_options());
  stack_pool_options po;
  po.min_bound = 8;
  po.surplus_batch = 4;
  stack_pool pool(allocator, po);
  std::vector<stack_slot*> held;
  for (int i = 0; i < 100; ++i) held.push_back(pool.acquire(0, nullptr));
  for (stack_slot* s : held) pool.release(s, 1'000);
  CHECK(pool.stats().local_free == 100);  // the peak of this window was 100
  pool.maintain(12'000);                  // the next window still remembers it
  CHECK(pool.stats().local_free == 100);
  pool.maintain(24'000);  // two windows without the burst: back to min_bound
  CHECK(pool.stats().local_free == 8);
  CHECK(allocator.stats().slots_surplus == 92);
  CHECK(allocator.stats().slots_in_use == 0);

  // Another worker's pool refills from the surplus in batches, hottest first.
  stack_pool other(allocator, po);
  stack_slot* s = other.acquire(0, nullptr);
  REQUIRE(s != nullptr);
  CHECK(other.stats().from_surplus == 4);
  CHECK(other.stats().carved == 0);
  CHECK(allocator.stats().slots_surplus == 88);
  // A stack released on a pool that did not hand it out (the actor migrated) is kept, within the bound.
  // Here it overflows the bound, and a batch goes, so the next releases do not lock again.
  pool.release(s, 24'001);
  CHECK(pool.stats().local_free == 4);
  CHECK(pool.stats().to_surplus == 92 + 5);
}

TEST_CASE("after a burst expires, a pool shrinks back to its bound and still hands out its hottest stack", "[stack]") {
  stack_allocator allocator(test_options());
  stack_pool_options po;
  po.min_bound = 8;
  stack_pool pool(allocator, po);
  std::vector<stack_slot*> held;
  for (int i = 0; i < 5000; ++i) held.push_back(pool.acquire(0, nullptr));
  for (stack_slot* s : held) pool.release(s, 0);
  pool.maintain(25'000);
  CHECK(pool.stats().local_free == 8);
  CHECK(allocator.stats().slots_surplus == 4992);
  CHECK(pool.acquire(0, nullptr) == held.back());
  CHECK(pool.acquire(0, nullptr) == held[held.size() - 2]);
}

TEST_CASE("maintain gives the pages of surplus stacks back, keeping their guards", "[stack]") {
  stack_allocator allocator(test_options());
  stack_pool_options po;
  po.min_bound = 4;
  stack_pool pool(allocator, po);
  release_dirty_burst(pool, allocator, 512);
  const size_t before = resident_bytes();
  const size_t trimmed = pool.maintain(30'000);
  const size_t after = resident_bytes();
  CHECK(trimmed == 512);  // 508 beyond the bound, and 4 local ones unused for a window
  CHECK(before - after >= 28 * 1024 * 1024);  // 512 x 64 KiB = 32 MiB
  CHECK(pool.maintain(30'001) == 0);           // nothing dirty is left
  CHECK(allocator.stats().slots_trimmed == 512);
  CHECK(pool.stats().trimmed == 512);
  // Trimmed stacks are handed out again as usual and are writable.
  stack_slot* s = pool.acquire(allocator.default_class(), nullptr);
  std::memset(s->lo, 2, s->size());
  CHECK(!s->clean);
}

TEST_CASE("once no stack moved anywhere for quiet_ms, maintain gives every free stack's pages back", "[stack]") {
  stack_allocator allocator(test_options());
  stack_pool_options po;
  po.min_bound = 4;
  stack_pool pool(allocator, po);
  release_dirty_burst(pool, allocator, 512);
  CHECK(pool.maintain(100) == 0);  // the burst just ended: its stacks may be wanted again
  CHECK(!pool.quiet());
  CHECK(pool.next_trim_ms() == 1'100);  // not the 10 s window: the quiet second
  // Traffic restarts the quiet second.
  stack_slot* s = pool.acquire(allocator.default_class(), nullptr);
  pool.release(s, 900);
  CHECK(pool.maintain(1'000) == 0);
  CHECK(pool.next_trim_ms() == 2'000);
  const size_t before = resident_bytes();
  CHECK(pool.maintain(2'000) == 512);
  CHECK(pool.quiet());
  CHECK(before - resident_bytes() >= 28 * 1024 * 1024);
  CHECK(pool.next_trim_ms() == UINT64_MAX);  // all clean: an idle worker may sleep for good
  CHECK(pool.stats().local_free + allocator.stats().slots_surplus == 512);
}

TEST_CASE("trim_uncarved gives back the top pages prefaulted in slots nobody carved yet", "[stack]") {
  stack_options o = test_options();
  o.chunk_slots = 1024;
  stack_allocator allocator(o);
  // Background jobs are queued (carve asks for one under its lock) and run after it.
  struct queued { void (*job)(void*); void* arg; };
  std::vector<queued> jobs;
  allocator.set_background([](void* q, void (*job)(void*), void* arg) {
    static_cast<std::vector<queued>*>(q)->push_back({job, arg});
  }, &jobs);
  const size_t before = resident_bytes();
  for (int i = 0; i <= 512; ++i) REQUIRE(allocator.carve(0, nullptr));  // half a chunk: prepares the next
  REQUIRE(jobs.size() == 1);
  jobs[0].job(jobs[0].arg);
  const size_t prefaulted = resident_bytes() - std::min(before, resident_bytes());
  const size_t pages = allocator.trim_uncarved();
  if (pages == 0) {
    HERD_SKIP("no prefaulting here (no pidfd / process_madvise): nothing to give back");
  }
  // The whole prepared chunk, and the current one's uncarved rest: carving
  // populated the tops of the slots it was about to hand out (16 at a time).
  CHECK(pages == 1024 + (1024 - 513));
  const size_t after = resident_bytes();
  CHECK(prefaulted >= 1024 * page);
  CHECK(before + prefaulted - after >= 1000 * page);
  CHECK(allocator.trim_uncarved() == 0);  // nothing touched since
  // Carving goes on into the trimmed chunk, whose slots are writable.
  for (int i = 0; i < 600; ++i) {
    stack_slot* s = allocator.carve(0, nullptr);
    REQUIRE(s);
    s->hi[-1] = 1;
  }
  // Half of that chunk asks for the next one: run it too (the job frees itself).
  for (std::size_t i = 1; i < jobs.size(); ++i) jobs[i].job(jobs[i].arg);
}

TEST_CASE("the prefault's touch of a top page changes no byte a fiber wrote there", "[stack]") {
  // Carving may overtake the background prefault inside one of its batches,
  // so the touch can land on a page a fiber already keeps frames in.
  stack_allocator allocator(test_options());
  stack_slot* s = allocator.carve(0, nullptr);
  REQUIRE(s);
  for (int b = 1; b <= 4096; ++b) s->hi[-b] = char(0xA5 ^ b);
  for (int b = 1; b <= 4096; b += 63) touch_page(s->hi - b);
  int changed = 0;
  for (int b = 1; b <= 4096; ++b) changed += s->hi[-b] != char(0xA5 ^ b);
  CHECK(changed == 0);
}

TEST_CASE("a guard still faults after its stack was trimmed", "[stack][probe]") {
  check_overflow_report(run_probe({"recursion", "--trimmed"}));
  check_overflow_report(run_probe({"recursion", "--trimmed", "--mprotect"}));
}

TEST_CASE("deep recursion on a herd stack is reported as an overflow of that actor, then aborts", "[stack][probe]") {
  auto r = run_probe({"recursion"});
  check_overflow_report(r);
  CHECK(r.out.find(std::string("guard=") + to_string(detect_guard_kind())) != std::string::npos);
}

TEST_CASE("a 64 KiB local array built with -fstack-clash-protection hits the guard instead of the stack below", "[stack][probe]") {
  check_overflow_report(run_probe({"array"}));
  check_overflow_report(run_probe({"array", "--mprotect"}));
}

TEST_CASE("a fault outside every guard is handed back and crashes as it would have, without a report", "[stack][probe]") {
  auto r = run_probe({"wild"});
  INFO("stderr: " << r.err);
  // TSan's handler, which we replaced, reports the SEGV itself and exits its own way.
  CHECK((r.signal == SIGSEGV || (tsan && r.err.find("ThreadSanitizer: SEGV") != std::string::npos)));
  CHECK(r.err.find("herd: stack overflow") == std::string::npos);
}

TEST_CASE("mprotect guards work when forced and cost two mappings per stack - madv_guard costs none", "[stack]") {
  {
    stack_allocator allocator(test_options(guard_kind::mprotect));
    CHECK(allocator.guard() == guard_kind::mprotect);
    const size_t maps = mapping_count();
    std::vector<stack_slot*> slots;
    for (int i = 0; i < 50; ++i) slots.push_back(allocator.carve(0, nullptr));
    const size_t added = mapping_count() - maps;
    CHECK(added >= 99);
    CHECK(added <= 110);
    const stack_slot* found = nullptr;
    CHECK(allocator.contains_guard(slots[7]->lo - 1, &found));
    CHECK(found == slots[7]);
    for (stack_slot* s : slots) std::memset(s->lo, 3, s->size());
  }
  if (detect_guard_kind() == guard_kind::madv_guard) {
    stack_allocator allocator(test_options(guard_kind::madv_guard));
    const size_t maps = mapping_count();
    for (int i = 0; i < 50; ++i) REQUIRE(allocator.carve(0, nullptr) != nullptr);
    CHECK(mapping_count() - maps <= 5);  // the one chunk, whatever else the allocator mapped
  }
}

#if !HERD_ASAN && !HERD_TSAN  // their allocators need the address space
TEST_CASE("a reservation that the kernel refuses fails with a message naming vm.max_map_count", "[stack]") {
  stack_allocator allocator(test_options());
  std::string error;
  rlimit old{};
  getrlimit(RLIMIT_AS, &old);
  std::ifstream statm("/proc/self/statm");
  size_t vm_pages = 0;
  statm >> vm_pages;
  rlimit tight = old;
  tight.rlim_cur = vm_pages * page + 64 * 1024 * 1024;  // room for malloc, not for a 1 GiB chunk
  REQUIRE(setrlimit(RLIMIT_AS, &tight) == 0);
  stack_slot* s = allocator.carve(6, &error);
  setrlimit(RLIMIT_AS, &old);
  CHECK(s == nullptr);
  CHECK(error.rfind("herd: ", 0) == 0);
  CHECK(error.find("sysctl -w vm.max_map_count=") != std::string::npos);
  CHECK(allocator.carve(6, &error) != nullptr);  // and it recovers once the limit is lifted
}
#endif

TEST_CASE("check_limits gives the exact sysctl when vm.max_map_count is too small for mprotect guards", "[stack][limits]") {
  int map_reads = 0;
  uint64_t fake_max_map_count = 65530;
  limits_source fake;
  fake.max_map_count = [&]() -> std::optional<uint64_t> { ++map_reads; return fake_max_map_count; };
  fake.nr_open = [] { return std::optional<uint64_t>(1 << 20); };
  fake.get_nofile = [](rlimit* r) { *r = {1 << 20, 1 << 20}; return true; };
  fake.set_nofile = [](const rlimit&) { return true; };

  limits_report r = check_limits(100'000, guard_kind::mprotect, 1000, fake);
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.errors.empty());
  CHECK(r.warnings[0].rfind("herd: ", 0) == 0);
  CHECK(r.warnings[0].find("sysctl -w vm.max_map_count=201000") != std::string::npos);
  CHECK(r.warnings[0].find("beyond ~32265 live actors") != std::string::npos);

  fake_max_map_count = 201'000;
  CHECK(check_limits(100'000, guard_kind::mprotect, 1000, fake).warnings.empty());

  fake_max_map_count = 900;  // not even one guarded stack fits
  r = check_limits(100'000, guard_kind::mprotect, 1000, fake);
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].find("sysctl -w vm.max_map_count=201000") != std::string::npos);

  map_reads = 0;  // madv_guard needs no mapping per stack: nothing is read, nothing said
  r = check_limits(100'000, guard_kind::madv_guard, 1000, fake);
  CHECK(map_reads == 0);
  CHECK(r.warnings.empty());
  CHECK(r.errors.empty());
}

TEST_CASE("check_limits raises the open-file soft limit to the hard limit and names every remedy when it is too low", "[stack][limits]") {
  rlimit current{1024, 4096};
  int sets = 0;
  limits_source fake;
  fake.max_map_count = [] { return std::optional<uint64_t>(65530); };
  fake.nr_open = [] { return std::optional<uint64_t>(1 << 20); };
  fake.get_nofile = [&](rlimit* r) { *r = current; return true; };
  fake.set_nofile = [&](const rlimit& r) { ++sets; current = r; return true; };

  limits_report r = check_limits(10, guard_kind::madv_guard, 100'000, fake);
  CHECK(current.rlim_cur == 4096);
  REQUIRE(r.warnings.size() == 1);
  const std::string& w = r.warnings[0];
  CHECK(w.rfind("herd: ", 0) == 0);
  for (const char* remedy : {"ulimit -n 100000", "fs.nr_open", "/etc/security/limits.conf", "LimitNOFILE",
                             "net.ipv4.ip_local_port_range"})
    CHECK(w.find(remedy) != std::string::npos);

  current = {1024, RLIM_INFINITY};  // an infinite soft limit is refused: nr_open is the ceiling
  r = check_limits(10, guard_kind::madv_guard, 100'000, fake);
  CHECK(current.rlim_cur == 1 << 20);
  CHECK(r.warnings.empty());

  sets = 0;
  current = {200'000, 200'000};
  r = check_limits(10, guard_kind::madv_guard, 100'000, fake);
  CHECK(sets == 0);
  CHECK(r.warnings.empty());
}

TEST_CASE("check_limits on the real system leaves the soft open-file limit at the hard limit", "[stack][limits]") {
  limits_report r = check_limits(1000, detect_guard_kind(), 16);
  CHECK(r.errors.empty());
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  CHECK((lim.rlim_cur == lim.rlim_max || lim.rlim_max == RLIM_INFINITY));
}

TEST_CASE("the overflow report is one line with the actor, the stack size and the addresses", "[stack]") {
  char buf[256];
  const char who[] = "<3.7> name=worker";
  size_t n = detail::format_overflow_report(buf, sizeof buf, who, sizeof who - 1, 65536, reinterpret_cast<void*>(0x7f0000000fe0),
                                            reinterpret_cast<void*>(0x7f0000000000), reinterpret_cast<void*>(0x7f0000001000));
  CHECK(std::string(buf, n) ==
        "herd: stack overflow in actor <3.7> name=worker: stack 65536 bytes, fault at 0x7f0000000fe0, guard "
        "0x7f0000000000-0x7f0000001000\n");
  const char pid_first[] = "pid <3.7> name=worker";  // as the actors layer writes it
  n = detail::format_overflow_report(buf, sizeof buf, pid_first, sizeof pid_first - 1, 65536, reinterpret_cast<void*>(1),
                                     reinterpret_cast<void*>(2), reinterpret_cast<void*>(3));
  CHECK(std::string(buf, n) == "herd: stack overflow in actor <3.7> name=worker: stack 65536 bytes, fault at 0x1, guard 0x2-0x3\n");
  n = detail::format_overflow_report(buf, sizeof buf, nullptr, 0, 16384, nullptr, nullptr, nullptr);
  CHECK(std::string(buf, n) == "herd: stack overflow in an unknown fiber: stack 16384 bytes, fault at 0x0, guard 0x0-0x0\n");
  n = detail::format_overflow_report(buf, 20, who, sizeof who - 1, 1, nullptr, nullptr, nullptr);
  CHECK(n == 20);
  CHECK(buf[19] == '\n');
}

TEST_CASE("a thread's alternate signal stack is installed once and removed at thread exit", "[stack]") {
  std::thread([] {
    stack_t before{}, during{}, again{}, after{};
    sigaltstack(nullptr, &before);
    CHECK(install_thread_altstack());
    sigaltstack(nullptr, &during);
    CHECK_FALSE(during.ss_flags & SS_DISABLE);
    CHECK(during.ss_size >= 16 * 1024);
    CHECK(install_thread_altstack());
    sigaltstack(nullptr, &again);
    CHECK(again.ss_sp == during.ss_sp);
    remove_thread_altstack();
    sigaltstack(nullptr, &after);
    CHECK(bool(after.ss_flags & SS_DISABLE) == bool(before.ss_flags & SS_DISABLE));
  }).join();
}

TEST_CASE("two workers exchanging stacks through the surplus lose none", "[stack]") {
  stack_allocator allocator(test_options());
  stack_pool_options po;
  po.min_bound = 16;
  std::mutex m;
  std::vector<stack_slot*> handoff;  // stacks of actors that "migrated" from worker 0 to worker 1
  std::atomic<int> failures{0};  // Catch2 assertions are not thread-safe
  auto worker = [&](int id) {
    stack_pool pool(allocator, po);
    std::string error;
    for (uint64_t i = 0; i < 20'000; ++i) {
      if (id == 0) {
        stack_slot* s = pool.acquire(uint32_t(i % 3), &error);
        if (!s) {
          ++failures;
          return;
        }
        s->hi[-1] = 1;
        if (i % 2) {
          pool.release(s, i);
        } else {
          std::lock_guard lock(m);
          handoff.push_back(s);
        }
      } else {
        stack_slot* s = nullptr;
        {
          std::lock_guard lock(m);
          if (!handoff.empty()) {
            s = handoff.back();
            handoff.pop_back();
          }
        }
        if (s) pool.release(s, i);
        if (i % 1000 == 0) pool.maintain(i * 10);
      }
    }
  };
  std::thread t0(worker, 0), t1(worker, 1);
  t0.join();
  t1.join();
  CHECK(failures == 0);
  for (stack_slot* s : handoff) {
    s->next = nullptr;
    allocator.put_surplus(s);
  }
  const stack_allocator_stats st = allocator.stats();
  CHECK(st.slots_in_use == 0);
  CHECK(st.slots_surplus == st.slots_carved);
}

// Actors spawned on one worker die on either, and the spawner moves between workers. Pools that
// counted their own acquires minus releases drifted apart; the one that had spawned kept every
// stack that died on it while the other carved anew: 500, 750, 1250, 1750 stacks carved after
// 1, 2, 10, 40 waves, growing with every streak.
TEST_CASE("stacks acquired on one pool and released on another, in waves, are reused, not carved anew", "[stack]") {
  enum pattern { moving_spawner, one_spawner };
  const pattern p = GENERATE(moving_spawner, one_spawner);
  CAPTURE(p == moving_spawner ? "spawner moves, exits split" : "spawner A, exits on B");
  stack_allocator allocator(test_options());
  stack_pool_options po;
  po.min_bound = 16;
  po.surplus_batch = 8;
  constexpr size_t wave = 500;
  constexpr uint64_t waves = 40;
  std::vector<stack_slot*> live(wave);
  std::vector<uint64_t> carved_after(waves);
  std::barrier sync(2);
  auto worker = [&](int id) {  // no Catch2 assertions here: they are not thread-safe
    stack_pool pool(allocator, po);
    for (uint64_t w = 0; w < waves; ++w) {
      const uint64_t now = w * 100;  // all in one 10 s window, as a burst of waves would be
      // Streaks of 1, 2, 3, ... waves on worker 0, 1, 0, ...: the pools' own counts drifted
      // further with every streak.
      uint64_t streak = 0;
      for (uint64_t end = 1; end <= w;) end += ++streak + 1;
      const int spawner = p == moving_spawner ? int(streak % 2) : 0;
      if (id == spawner) {
        for (stack_slot*& s : live) {
          s = pool.acquire(0, nullptr);
          if (!s) std::abort();  // else the other thread would wait at the barrier forever
          s->hi[-1] = 1;
        }
      }
      sync.arrive_and_wait();
      // Exits: the first half on worker 0 and the second on worker 1, or all on worker 1.
      const size_t from = p == one_spawner ? 0 : id * wave / 2;
      const size_t to = p == one_spawner ? (id == 1 ? wave : 0) : from + wave / 2;
      for (size_t i = from; i < to; ++i) pool.release(live[i], now);
      sync.arrive_and_wait();
      pool.maintain(now);  // as a worker does before parking, once the wave is over
      sync.arrive_and_wait();
      if (id == 0) carved_after[w] = allocator.stats().slots_carved;
      sync.arrive_and_wait();
    }
  };
  std::thread t0(worker, 0), t1(worker, 1);
  t0.join();
  t1.join();
  INFO("carved after 1, 2, 10, 40 waves: " << carved_after[0] << ", " << carved_after[1] << ", " << carved_after[9]
                                           << ", " << carved_after[waves - 1]);
  // Each pool may keep min_bound, plus a batch of room; everything else is reused.
  CHECK(carved_after[waves - 1] <= wave + 2 * (po.min_bound + po.surplus_batch));
  CHECK(carved_after[waves - 1] == carved_after[9]);  // and it stopped growing
  const stack_allocator_stats st = allocator.stats();
  CHECK(st.slots_in_use == 0);
  CHECK(st.slots_surplus == st.slots_carved);
}

TEST_CASE("surplus stacks keep their pages until they lay there unused for a whole window", "[stack]") {
  stack_allocator allocator(test_options());
  auto dirty_chain = [&](int n) {
    stack_slot* chain = nullptr;
    for (int i = 0; i < n; ++i) {
      stack_slot* s = allocator.carve(0, nullptr);
      s->hi[-1] = 1;
      s->clean = false;
      s->next = chain;
      chain = s;
    }
    return chain;
  };
  allocator.put_surplus(dirty_chain(10));
  CHECK(allocator.trim_surplus(100) == 0);  // just handed over: maybe on its way to another pool
  allocator.roll_window(10'000, 10'000);
  CHECK(allocator.trim_surplus(100) == 0);  // put during the window that just ended
  allocator.roll_window(20'000, 10'000);
  CHECK(allocator.trim_surplus(100) == 10);  // a whole window in the surplus
  // A pool that knows its stacks lay unused for a window already says so.
  allocator.put_surplus(dirty_chain(5), true);
  CHECK(allocator.trim_surplus(100) == 5);
  CHECK(allocator.stats().slots_trimmed == 15);
  // Reuse takes the most recently used first: fresh dirty slots before trimmed ones.
  stack_slot* warm = dirty_chain(1);
  allocator.put_surplus(warm);
  size_t taken = 0;
  CHECK(allocator.take_surplus(0, 1, &taken) == warm);
  CHECK(allocator.stats().slots_surplus == 15);
}

TEST_CASE("run_subprocess captures output and exit status and kills a child that overstays", "[subprocess]") {
  using herd::test::run_subprocess;
  auto r = run_subprocess({"/bin/sh", "-c", "echo out; echo err >&2; echo \"$HERD_X\"; exit 3"}, {std::chrono::seconds(10), {"HERD_X=42"}});
  CHECK(r.exited());
  CHECK(r.exit_code == 3);
  CHECK(r.out == "out\n42\n");
  CHECK(r.err == "err\n");

  r = run_subprocess({"/bin/sh", "-c", "kill -ABRT $$"});
  CHECK(r.signal == SIGABRT);
  CHECK_FALSE(r.exited());

  // A child that would run 20 s (the work the timeout cuts short): killed at the timeout.
  r = run_subprocess({"/bin/sleep", "20"}, {std::chrono::milliseconds(200), {}});
  CHECK(r.timed_out);
  CHECK(r.signal == SIGKILL);

  r = run_subprocess({"/nonexistent/program"});
  CHECK_FALSE(r.started);
  CHECK_FALSE(r.spawn_error.empty());
}

TEST_CASE("carve and acquire/release costs", "[.][bench]") {
  for (guard_kind kind : {detect_guard_kind(), guard_kind::mprotect}) {
    stack_options o = test_options(kind);
    o.chunk_slots = 1024;
    stack_allocator allocator(o);
    const int n = kind == guard_kind::mprotect ? 20'000 : 100'000;  // mprotect: stay under 65,530 maps
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) REQUIRE(allocator.carve(allocator.default_class(), nullptr));
    double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / n;
    std::printf("carve (%s, chunks of 1024): %.0f ns per slot\n", to_string(kind), ns);
  }
  stack_allocator allocator(test_options());
  stack_pool pool(allocator);
  std::vector<stack_slot*> held(64);
  for (auto& s : held) s = pool.acquire(allocator.default_class(), nullptr);
  for (auto* s : held) pool.release(s, 0);
  const int rounds = 200'000;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < rounds; ++i) {
    for (auto& s : held) s = pool.acquire(allocator.default_class(), nullptr);
    for (auto* s : held) pool.release(s, uint64_t(i) / 64);
  }
  double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / (rounds * 64.0);
  std::printf("acquire + release (64 live): %.1f ns per pair\n", ns);
}
