// The leak check at teardown: the root returns while thousands of processes are alive in every
// state a process can be in — blocked in receive with unread messages, sleeping, waiting with a
// receive timeout, with a send_after pending, hibernated (with and without a message that woke
// it), parked in blocking(), swallowing the exit signal a few times. The node must unwind them
// all: afterwards no message (node::live_messages() == 0), no stack (stacks_in_use == 0) and
// no object that lived on a stack, in a message or in a hibernate continuation remains.
#include "stress/stress_support.hpp"
#include "support/subprocess.hpp"

#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace teardown_msgs {
struct never {};  // nobody sends it
struct ready {
  int kind;
};
struct wake_up {};
}  // namespace teardown_msgs

using herd::stress::check_clean;
using herd::stress::options;
using herd::stress::run_node;
using herd::test::scaled;
using namespace std::chrono_literals;

namespace {

std::atomic<int64_t> g_objects{0};  // live `counted` objects, wherever they are

struct counted {
  counted() { g_objects.fetch_add(1, std::memory_order_relaxed); }
  counted(const counted&) { g_objects.fetch_add(1, std::memory_order_relaxed); }
  counted(counted&&) noexcept { g_objects.fetch_add(1, std::memory_order_relaxed); }
  counted& operator=(const counted&) = default;
  ~counted() { g_objects.fetch_sub(1, std::memory_order_relaxed); }
};

}  // namespace

namespace teardown_msgs {
struct unread {  // left in mailboxes: its destructor must run at teardown
  counted c;
  std::string text;
  std::vector<int> data;
};
}  // namespace teardown_msgs

namespace {

enum kind : int {
  k_receive,        // blocked in receive, unread messages in the mailbox
  k_sleep,          // herd::sleep(1 h)
  k_timeout,        // receive with a 1 h timeout
  k_send_after,     // a send_after(1 h) to itself pending, blocked in receive
  k_hibernated,     // hibernated, the continuation owns a counted
  k_hib_woken,      // hibernated, woken by an unmatched message, blocked in receive
  k_blocking,       // parked in blocking() (100 ms on the pool; only a few: the pool is small)
  k_swallower,      // catches the exit signal three times before giving up
  k_kinds
};

teardown_msgs::unread make_unread(int i) {
  return teardown_msgs::unread{counted{}, std::string(100 + i % 300, 'x'), std::vector<int>(size_t(i % 50), i)};
}

void member(herd::pid root, int k, std::atomic<int>* swallowed) {
  counted on_stack;
  const herd::pid me = herd::self();
  switch (k) {
    case k_receive:
      for (int i = 0; i < 5; ++i) herd::send(me, make_unread(i));
      herd::send(root, teardown_msgs::ready{k});
      herd::receive([](teardown_msgs::never) {});
      break;
    case k_sleep:
      herd::send(root, teardown_msgs::ready{k});
      herd::sleep(1h);  // the state under test: sleeping
      break;
    case k_timeout:
      herd::send(root, teardown_msgs::ready{k});
      herd::receive([](teardown_msgs::never) {}, herd::after(1h, [] {}));
      break;
    case k_send_after:
      herd::send_after(1h, me, make_unread(7));
      herd::send(root, teardown_msgs::ready{k});
      herd::receive([](teardown_msgs::never) {});
      break;
    case k_blocking:
      herd::send(root, teardown_msgs::ready{k});
      herd::blocking([] { std::this_thread::sleep_for(100ms); });  // the state under test: in blocking()
      herd::receive([](teardown_msgs::never) {});
      break;
    case k_swallower:
      herd::send(root, teardown_msgs::ready{k});
      for (int i = 0; i < 3; ++i) {
        try {
          herd::receive([](teardown_msgs::never) {});
        } catch (...) {
          swallowed->fetch_add(1, std::memory_order_relaxed);
        }
      }
      break;
    default:
      break;
  }
}

herd::hibernation hibernator(herd::pid root, int k) {
  counted owned;
  herd::send(root, teardown_msgs::ready{k});
  return herd::hibernated([root, k, owned] {
    counted on_stack;
    (void)owned;
    if (k == k_hib_woken) herd::send(root, teardown_msgs::ready{k});
    herd::receive([](teardown_msgs::never) {});
  });
}

}  // namespace

TEST_CASE("teardown: the root exits while processes are alive in every state and nothing leaks", "[stress][teardown]") {
  const unsigned workers = GENERATE(from_range(std::begin(herd::test::worker_counts), std::end(herd::test::worker_counts)));
  const int per_kind = int(scaled(1'000, 100));
  CAPTURE(workers, per_kind);
  int count[k_kinds];
  for (int& c : count) c = per_kind;
  count[k_blocking] = 16;
  int total = 0;
  for (int c : count) total += c;
  g_objects.store(0);
  std::atomic<int> swallowed{0};
  int ready[k_kinds] = {};
  const auto r = run_node(options(workers), [&] {
    const herd::pid me = herd::self();
    std::vector<herd::pid> woken;
    for (int k = 0; k < k_kinds; ++k)
      for (int i = 0; i < count[k]; ++i) {
        if (k == k_hibernated || k == k_hib_woken) {
          const herd::pid p = herd::spawn(hibernator, me, k);
          if (k == k_hib_woken) woken.push_back(p);
        } else {
          herd::spawn(member, me, k, &swallowed);
        }
      }
    const int expected = total + count[k_hib_woken];  // k_hib_woken reports twice
    for (int got = 0; got < expected; ++got) {
      if (got == total)
        for (herd::pid p : woken) herd::send(p, make_unread(3));  // wakes them: fn starts
      herd::receive([&](teardown_msgs::ready m) { ++ready[m.kind]; });
    }
    // Messages sent to processes that the shutdown is about to kill.
    for (herd::pid p : woken) herd::send(p, make_unread(4));
  });
  for (int k = 0; k < k_kinds; ++k) {
    INFO("kind " << k);
    CHECK(ready[k] == (k == k_hib_woken ? 2 : 1) * count[k]);
  }
  CHECK(swallowed.load() == 3 * count[k_swallower]);
  CHECK(g_objects.load() == 0);
  CHECK(r.reason.is_normal());
  check_clean(r, size_t(total + 1));
}

namespace {

std::string self_exe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

}  // namespace

// Hidden ([.]): run by name in a subprocess by the test below. No commas in the name: Catch2
// would read them as separate test specs.
TEST_CASE("five nodes in a row in one process each with 1800 processes alive at once", "[.][child]") {
  for (int k = 0; k < 5; ++k) {
    const auto r = run_node(options(1), [] {
      std::vector<herd::pid> pids;
      for (int i = 0; i < 1'800; ++i) pids.push_back(herd::spawn([] { herd::receive([](teardown_msgs::wake_up) {}); }));
      for (herd::pid p : pids) herd::send(p, teardown_msgs::wake_up{});
    });
    check_clean(r, 1'801);
  }
}

// Under TSan the context switcher makes a TSan fiber per stack slot it runs on, and TSan dies
// past 8,128 of them ("Thread limit exceeded"): the allocator must destroy them with its
// slots, or a process running several nodes in a row (a test binary) runs out, although no
// node ever has more than 1,801 stacks.
TEST_CASE("several nodes in a row in one process do not exhaust sanitizer fibers", "[stress][teardown]") {
  herd::test::subprocess_options o;
  o.timeout = std::chrono::seconds(120);
  const auto r = herd::test::run_subprocess(
      {self_exe(), "five nodes in a row in one process each with 1800 processes alive at once"}, o);
  INFO("stdout: " << r.out << "\nstderr: " << r.err << "\nspawn error: " << r.spawn_error);
  REQUIRE(r.started);
  CHECK(r.exited());
  CHECK(r.exit_code == 0);
}
