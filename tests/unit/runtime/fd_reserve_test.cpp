// rt::fd_reserve, the gate between the node's acceptors and the observer
// handing its spare descriptor over. The protocol alone, on threads: a
// hand-over waits for the takers inside, and no taker gets in until it
// ends. (Against real descriptors and the real acceptors: the EMFILE probe
// in net_tests.) Every assertion is on order, none on timing.
#include <herd/runtime/fd_reserve.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

namespace fr = herd::rt::fd_reserve;

TEST_CASE("fd_reserve: a hand-over waits for the taker inside, then runs with every taker kept out", "[runtime][fd_reserve]") {
  REQUIRE(fr::try_enter());  // a taker inside
  std::atomic<bool> ran{false};
  bool refused_during = false;
  std::thread giver([&] {
    fr::hand_over([&] {
      ran.store(true);
      std::thread other([&] {
        fr::taker t;
        refused_during = !t;
      });
      other.join();
    });
  });
  // The hand-over has begun once a newcomer is refused (a refusal leaves
  // the counts as they were).
  for (;;) {
    fr::taker t;
    if (!t) break;
    std::this_thread::yield();  // (this loop is not what the gate is waiting for: the first taker is)
  }
  CHECK_FALSE(ran.load());  // the first taker has not left: the hand-over must not run yet
  fr::leave();
  giver.join();
  CHECK(ran.load());
  CHECK(refused_during);
  fr::taker after;
  CHECK(static_cast<bool>(after));  // ended: takers are let in again
}

TEST_CASE("fd_reserve: a hand-over that throws still lets the takers back in", "[runtime][fd_reserve]") {
  CHECK_THROWS_AS(fr::hand_over([]() -> int { throw 7; }), int);
  fr::taker t;
  CHECK(static_cast<bool>(t));
}
