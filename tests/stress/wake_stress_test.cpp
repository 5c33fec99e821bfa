// Wake-up storms: many processes blocked in receive, all woken at once by one broadcaster,
// round after round; and many senders waking one receiver, also while its receive timeouts
// race the messages (exactly one of the sender and the timer may schedule it).
#include "stress/stress_support.hpp"

#include <algorithm>
#include <atomic>
#include <vector>

namespace wake_msgs {
struct tick {
  uint32_t round;
};
struct ack {
  uint32_t round;
  uint32_t listener;
};
struct go {};
struct item {
  uint32_t sender;
  uint32_t seq;
};
struct sender_done {};
}  // namespace wake_msgs

using herd::stress::check_clean;
using herd::stress::options;
using herd::stress::run_node;
using herd::test::scaled;
using namespace std::chrono_literals;

namespace {

struct listener_report {
  std::atomic<uint64_t> out_of_order{0};
  std::atomic<uint64_t> timeouts{0};
};

// Blocked in receive between rounds; a tick must be the next round. The long timeout is never
// meant to fire: it makes every wake-up also unlink an armed timer from the listener's wheel.
void listener(herd::pid broadcaster, uint32_t index, uint32_t rounds, listener_report* rep) {
  for (uint32_t r = 0; r < rounds; ++r) {
    bool got = false;
    while (!got) {
      herd::receive(
          [&](wake_msgs::tick t) {
            if (t.round != r) rep->out_of_order.fetch_add(1, std::memory_order_relaxed);
            got = true;
          },
          herd::after(30s, [&] { rep->timeouts.fetch_add(1, std::memory_order_relaxed); }));
    }
    herd::send(broadcaster, wake_msgs::ack{r, index});
  }
}

}  // namespace

TEST_CASE("wake-up storm: one broadcaster wakes every blocked listener at once, round after round",
          "[stress][wake]") {
  const unsigned workers = GENERATE(2u, 4u);
  const uint32_t listeners = uint32_t(scaled(1'000, 500));
  const uint32_t rounds = uint32_t(scaled(2'000, 40));
  CAPTURE(workers, listeners, rounds);
  listener_report rep;
  uint64_t acks = 0, wrong_round = 0, duplicate = 0;
  const auto r = run_node(options(workers), [&] {
    const herd::pid me = herd::self();
    std::vector<herd::pid> pids;
    for (uint32_t i = 0; i < listeners; ++i) pids.push_back(herd::spawn(listener, me, i, rounds, &rep));
    std::vector<uint32_t> acked(listeners);
    for (uint32_t round = 0; round < rounds; ++round) {
      std::fill(acked.begin(), acked.end(), 0);
      for (herd::pid p : pids) herd::send(p, wake_msgs::tick{round});
      for (uint32_t i = 0; i < listeners; ++i)
        herd::receive([&](wake_msgs::ack a) {
          ++acks;
          if (a.round != round) ++wrong_round;
          if (a.listener >= listeners || acked[a.listener]++) ++duplicate;
        });
    }
  });
  CHECK(acks == uint64_t(listeners) * rounds);
  CHECK(wrong_round == 0);
  CHECK(duplicate == 0);
  CHECK(rep.out_of_order.load() == 0);
  CHECK(rep.timeouts.load() == 0);
  check_clean(r, listeners + 1);
}

TEST_CASE("wake-up storm: many senders wake one receiver and per-sender order holds", "[stress][wake]") {
  const unsigned workers = GENERATE(2u, 4u);
  const uint32_t senders = 1'000;
  const uint32_t per_sender = uint32_t(scaled(2000, 20));
  CAPTURE(workers, senders, per_sender);
  uint64_t received = 0, out_of_order = 0;
  const auto r = run_node(options(workers), [&] {
    const herd::pid me = herd::self();
    std::vector<herd::pid> pids;
    for (uint32_t s = 0; s < senders; ++s)
      pids.push_back(herd::spawn([me, s, per_sender] {
        herd::receive([](wake_msgs::go) {});
        for (uint32_t k = 0; k < per_sender; ++k) {
          herd::send(me, wake_msgs::item{s, k});
          if (k % 16 == 15) herd::yield();  // let the receiver drain and block again
        }
      }));
    std::vector<uint32_t> next(senders);
    for (herd::pid p : pids) herd::send(p, wake_msgs::go{});
    const uint64_t total = uint64_t(senders) * per_sender;
    while (received < total)
      herd::receive([&](wake_msgs::item m) {
        ++received;
        if (m.sender >= senders || m.seq != next[m.sender]++) ++out_of_order;
      });
  });
  CHECK(received == uint64_t(senders) * per_sender);
  CHECK(out_of_order == 0);
  check_clean(r, senders + 1);
}

TEST_CASE("wake-up storm: senders race the receiver's 1 ms receive timeouts", "[stress][wake]") {
  // Paced senders (a message, then a 1 or 2 ms sleep) against a receiver whose every receive
  // has a 1 ms timeout: wake by message and wake by timer race all the time (the senders'
  // sleeps and the receiver's timeout come due on the same timer ticks). Nothing may be lost,
  // duplicated or reordered, and the receiver must never hang.
  const unsigned workers = GENERATE(2u, 4u);
  const uint32_t senders = uint32_t(scaled(16, 8));
  const uint32_t per_sender = uint32_t(scaled(600, 100));
  CAPTURE(workers, senders, per_sender);
  uint64_t received = 0, out_of_order = 0, timeouts = 0;
  const auto r = run_node(options(workers), [&] {
    const herd::pid me = herd::self();
    std::vector<herd::pid> pids;
    for (uint32_t s = 0; s < senders; ++s)
      pids.push_back(herd::spawn([me, s, per_sender] {
        herd::receive([](wake_msgs::go) {});
        for (uint32_t k = 0; k < per_sender; ++k) {
          herd::send(me, wake_msgs::item{s, k});
          herd::sleep(std::chrono::milliseconds(1 + s % 2));  // bursts every 1 and 2 ms: the pace under test
        }
      }));
    std::vector<uint32_t> next(senders);
    for (herd::pid p : pids) herd::send(p, wake_msgs::go{});
    const uint64_t total = uint64_t(senders) * per_sender;
    while (received < total)
      herd::receive(
          [&](wake_msgs::item m) {
            ++received;
            if (m.sender >= senders || m.seq != next[m.sender]++) ++out_of_order;
          },
          herd::after(1ms, [&] { ++timeouts; }));
  });
  CHECK(received == uint64_t(senders) * per_sender);
  CHECK(out_of_order == 0);
  INFO("receive timeouts that fired: " << timeouts);
  check_clean(r, senders + 1);
}
