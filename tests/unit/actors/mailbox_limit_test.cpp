// spawn_options::max_mailbox: a flooded process is killed and/or reported,
// as BEAM's max_heap_size does; without a limit a mailbox just grows (and
// what a queued message costs is measured here).
#include <herd/runtime/sanitizers.hpp>
#include <herd/actors.hpp>
#include <herd/actors/introspect.hpp>

#include <catch2/catch.hpp>

#include "support/node_fixture.hpp"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using herd::test::run_node;

namespace mailbox_limit_test {
struct flood {
  int n;
};
struct drain_now {};
}  // namespace mailbox_limit_test
using namespace mailbox_limit_test;

namespace {

// What the observer reports as waiting in p's mailbox (SIZE_MAX: p is gone).
std::size_t mailbox_length(herd::pid p) {
  auto info = herd::introspect::process_info(p);
  return info ? std::size_t(info->row.mailbox) : SIZE_MAX;
}

struct log_capture {
  std::string path = "/tmp/herd-mailbox-limit-" + std::to_string(::getpid()) + ".log";
  log_capture() { REQUIRE(herd::set_log_file(path)); }
  std::string text() {
    herd::log_flush();
    herd::set_log_stderr();
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    ::unlink(path.c_str());
    return s.str();
  }
};

std::size_t count(const std::string& hay, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

long rss_kb() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

}  // namespace

TEST_CASE("a process whose mailbox passes its limit is killed, untrappably, and reported", "[mailbox_limit]") {
  log_capture log;
  herd::exit_reason why;
  std::size_t left_behind = 0;
  auto r = run_node(herd::test::opts(2), [&] {
    herd::pid slow = herd::spawn(herd::spawn_options{.name = "slow_consumer", .max_mailbox = {.messages = 100}}, [] {
      herd::trap_exit(true);  // a kill is not trappable
      herd::receive([](drain_now) {});  // never comes: the floods pile up
    });
    herd::monitor(slow);
    for (int i = 0; i < 150; ++i) herd::send(slow, flood{i});
    herd::receive([&](const herd::down& d) { why = d.reason; }, herd::after(5s, [] {}));
    // `down` is sent while the process ends; its count drops just after.
    herd::test::wait_live(1);
    left_behind = herd::current_node_stats().live_processes;
  });
  INFO(r.to_string());
  CHECK(r.is_normal());
  CHECK(why.to_string() == "killed");
  CHECK(left_behind == 1);  // the root alone
  std::string text = log.text();
  INFO(text);
  CHECK(count(text, "(slow_consumer): mailbox above 100 messages; killed (max_mailbox)") == 1);
}

TEST_CASE("a log-only limit reports each time the mailbox passes it again after draining below half", "[mailbox_limit]") {
  log_capture log;
  bool alive = false;
  auto r = run_node(herd::test::opts(2), [&] {
    herd::pid me = herd::self();
    herd::pid p = herd::spawn(herd::spawn_options{.max_mailbox = {.messages = 50, .kill = false}}, [me] {
      for (;;) {
        herd::receive([](drain_now) {});
        // Take every flood out, then say so.
        while (herd::receive([](flood) { return true; }, herd::after(0ms, [] { return false; }))) {
        }
        herd::send(me, drain_now{});
      }
    });
    for (int round = 0; round < 2; ++round) {
      for (int i = 0; i < 80; ++i) herd::send(p, flood{i});
      herd::send(p, drain_now{});
      herd::receive([](drain_now) {});
    }
    alive = herd::introspect::process_info(p).has_value();
    herd::exit(p, herd::exit_reason::kill());
  });
  INFO(r.to_string());
  CHECK(r.is_normal());
  CHECK(alive);
  std::string text = log.text();
  INFO(text);
  CHECK(count(text, "mailbox above 50 messages (max_mailbox)") == 2);
  CHECK(count(text, "killed (max_mailbox)") == 0);
}

TEST_CASE("a producer outpacing its consumer under a supervisor-style restart loop keeps memory bounded", "[mailbox_limit]") {
  // Without a limit this producer would queue 2,000,000 messages; with one the
  // consumer dies at 10,000 and a fresh one takes over, so the node never
  // holds more than about one mailbox's worth.
  long peak_growth_kb = 0;
  int consumers = 0;
  auto r = run_node(herd::test::opts(2), [&] {
    const long base = rss_kb();
    herd::pid c;
    auto fresh = [&] {
      ++consumers;
      c = herd::spawn(herd::spawn_options{.max_mailbox = {.messages = 10000, .log = false}}, [] {
        for (;;) herd::receive([](flood) { herd::sleep(1ms); });  // slow: its pace is the workload
      });
    };
    fresh();
    for (int i = 0; i < 2'000'000; ++i) {
      herd::send(c, flood{i});
      if (i % 1000 == 0 && !herd::introspect::process_info(c)) fresh();
      if (i % 100'000 == 0) peak_growth_kb = std::max(peak_growth_kb, rss_kb() - base);
    }
    herd::exit(c, herd::exit_reason::kill());
  });
  INFO(r.to_string());
  CHECK(r.is_normal());
  CHECK(consumers > 10);
  WARN("2,000,000 sends to slow consumers limited to 10,000 messages: " << consumers
       << " consumers, peak RSS growth " << peak_growth_kb << " KiB");
  // Unbounded, it would be ~2,000,000 x ~44 B = 84 MiB (a release build grows
  // ~2 MiB). Under TSan a message costs 282 bytes or more (its allocator's
  // header and rounding: the test below) and the shadow memory and allocator
  // caches grew 31-104 MiB in 22 runs here, so the bound there is 256 MiB,
  // still half of the ~540 MiB an unbounded mailbox would take. Not under
  // ASan: its quarantine keeps freed messages out of reuse, so RSS grows
  // regardless.
#if HERD_TSAN
  CHECK(peak_growth_kb < 256 * 1024);
#elif !HERD_ASAN
  CHECK(peak_growth_kb < 64 * 1024);
#endif
}

TEST_CASE("without a limit a mailbox grows - what a queued message costs", "[mailbox_limit]") {
  long growth_kb = 0;
  std::size_t queued = 0;
  auto r = run_node(herd::test::opts(1), [&] {
    herd::pid p = herd::spawn([] { herd::receive([](drain_now) {}); });
    const long base = rss_kb();
    for (int i = 0; i < 1'000'000; ++i) herd::send(p, flood{i});
    growth_kb = rss_kb() - base;
    auto info = herd::introspect::process_info(p);
    queued = info ? info->row.mailbox : 0;
    herd::exit(p, herd::exit_reason::kill());
  });
  INFO(r.to_string());
  CHECK(r.is_normal());
  CHECK(queued == 1'000'000);
  const double per_message = growth_kb * 1024.0 / 1e6;
  WARN("an unlimited mailbox: 1,000,000 queued 4-byte messages cost " << per_message << " bytes each");
  CHECK(per_message > 16);   // it really grew (the messages are held)
  // and each costs one small allocation, no more (TSan's allocator adds its
  // own header and rounding: 282 bytes here, so the bound is not checked there)
#if !HERD_TSAN
  CHECK(per_message < 256);
#endif
}

TEST_CASE("a mailbox's length stays exact past the 65,536 pushes its head word counts", "[mailbox_limit]") {
  // The head word counts pushes the owner has not taken modulo 65,536
  // (mailbox.hpp); a push that wraps the count adds 65,536 aside, and the
  // owner takes the wraps back out when it takes the messages. Here nothing
  // is taken while 150,000 arrive (two wraps): the owner spins without a
  // receive while a plain thread sends.
  constexpr std::size_t n = 150'000;
  std::size_t before_take = 0, after_take = 0, after_half = 0, at_end = 0;
  std::size_t half_sum = 0;
  auto r = run_node(herd::test::opts(2), [&] {
    const herd::pid me = herd::self();
    std::atomic<bool> sent{false};
    std::thread sender([&] {
      for (std::size_t i = 0; i < n; ++i) herd::send(me, flood{int(i)});
      sent.store(true, std::memory_order_release);
    });
    while (!sent.load(std::memory_order_acquire)) {
    }  // no blocking point: nothing is taken from the head meanwhile
    sender.join();
    before_take = mailbox_length(me);
    // A receive that matches nothing takes everything into the save queue.
    herd::receive([](drain_now) {}, herd::after(0ms, [] {}));
    after_take = mailbox_length(me);
    for (std::size_t i = 0; i < n / 2; ++i) herd::receive([&](flood f) { half_sum += std::size_t(f.n); });
    after_half = mailbox_length(me);
    for (std::size_t i = n / 2; i < n; ++i) herd::receive([](flood) {});
    at_end = mailbox_length(me);
  });
  INFO(r.to_string());
  CHECK(r.is_normal());
  CHECK(before_take == n);
  CHECK(after_take == n);
  CHECK(after_half == n / 2);
  CHECK(at_end == 0);
  CHECK(half_sum == (n / 2) * (n / 2 - 1) / 2);  // the first half, in order
}

TEST_CASE("a mailbox's length is exact after concurrent senders wrap its count while the owner takes", "[mailbox_limit]") {
  // Three plain threads push 100,000 messages each. The owner takes nothing
  // until 70,000 are in (so the count wraps with pushes in flight), then takes
  // and receives while the rest arrive; once the senders are done the length
  // is exactly what was sent less what was received, and each sender's
  // messages came in its order.
  constexpr int senders = 3, per_sender = 100'000;
  struct tagged {
    int from, seq;
  };
  std::size_t after_join = 0, expected_after_join = 0, at_end = 0;
  bool in_order = true;
  auto r = run_node(herd::test::opts(2), [&] {
    const herd::pid me = herd::self();
    std::atomic<int> pushed{0};
    std::vector<std::thread> ts;
    for (int s = 0; s < senders; ++s)
      ts.emplace_back([&, s] {
        for (int i = 0; i < per_sender; ++i) {
          herd::send(me, tagged{s, i});
          pushed.fetch_add(1, std::memory_order_relaxed);
        }
      });
    while (pushed.load(std::memory_order_relaxed) < 70'000) {
    }  // no blocking point: nothing is taken yet
    int next[senders] = {};
    std::size_t received = 0;
    auto take_one = [&] {
      herd::receive([&](tagged t) {
        if (t.seq != next[t.from]) in_order = false;
        next[t.from] = t.seq + 1;
      });
      ++received;
    };
    for (int i = 0; i < 50'000; ++i) take_one();  // while the senders go on
    for (auto& t : ts) t.join();
    after_join = mailbox_length(me);
    expected_after_join = std::size_t(senders) * per_sender - received;
    while (received < std::size_t(senders) * per_sender) take_one();
    at_end = mailbox_length(me);
  });
  INFO(r.to_string());
  CHECK(r.is_normal());
  CHECK(after_join == expected_after_join);
  CHECK(at_end == 0);
  CHECK(in_order);
}
