// Message envelopes are reused from the freeing thread's cache (issue 19,
// actors/src/message.cpp): a reused envelope must carry the new message's
// value intact whatever its size class, envelopes made on one thread and
// freed on another must be accounted for, and a message whose value fails to
// build must give its envelope back and not count as live.
#include <herd/actors.hpp>

#include <catch2/catch.hpp>

#include "support/node_fixture.hpp"
#include "support/scale.hpp"

#include <array>
#include <cstdint>
#include <stdexcept>
#include <thread>

using herd::test::run_node;

namespace message_cache_test_msgs {
// A value of N bytes whose every byte is derived from a seed, so a reused
// envelope that kept bytes of its previous message shows.
template <std::size_t N>
struct blob {
  std::array<unsigned char, N> bytes;
  explicit blob(uint32_t seed) {
    for (std::size_t i = 0; i < N; ++i) bytes[i] = static_cast<unsigned char>(seed * 131 + i * 7);
  }
  bool intact(uint32_t seed) const {
    for (std::size_t i = 0; i < N; ++i)
      if (bytes[i] != static_cast<unsigned char>(seed * 131 + i * 7)) return false;
    return true;
  }
};
// The round travels beside the blob: {round, blob}.
template <std::size_t N>
struct numbered {
  uint32_t round;
  blob<N> body;
  explicit numbered(uint32_t r) : round(r), body(r) {}
};
struct stop {};
struct throws_on_copy {
  throws_on_copy() = default;
  throws_on_copy(const throws_on_copy&) { throw std::runtime_error("no copy"); }
};
}  // namespace message_cache_test_msgs

using namespace message_cache_test_msgs;

namespace {
// Sizes on both sides of every class boundary (the header is 32 bytes,
// classes step by 32 up to 256) and past the cached range.
template <class F>
void for_each_size(F&& f) {
  f.template operator()<1>();
  f.template operator()<28>();
  f.template operator()<29>();
  f.template operator()<60>();
  f.template operator()<61>();
  f.template operator()<124>();
  f.template operator()<188>();
  f.template operator()<220>();
  f.template operator()<221>();
  f.template operator()<500>();
}
}  // namespace

TEST_CASE("reused message envelopes carry each new value intact, in every size class", "[message][alloc]") {
  const uint32_t rounds = uint32_t(herd::test::scaled(3000, 300));
  const std::ptrdiff_t before = herd::node::live_messages();
  uint64_t bad = 0, seen = 0;
  auto r = run_node(herd::test::opts(HERD_WORKERS()), [&] {
    herd::pid me = herd::self();
    // Echoes every numbered<N> back, checked, as a fresh message; runs on
    // whichever worker it lands on, so envelopes cross workers too.
    herd::pid echo = herd::spawn([me] {
      bool done = false;
      while (!done) {
        auto check_and_return = [me](const auto& m) {
          using T = std::remove_cvref_t<decltype(m)>;
          if (!m.body.intact(m.round)) herd::send(me, stop{});  // reported as a bad round below
          herd::send(me, T(m.round + 1));
        };
        herd::receive([&](stop) { done = true; },
                      [&](const numbered<1>& m) { check_and_return(m); },
                      [&](const numbered<28>& m) { check_and_return(m); },
                      [&](const numbered<29>& m) { check_and_return(m); },
                      [&](const numbered<60>& m) { check_and_return(m); },
                      [&](const numbered<61>& m) { check_and_return(m); },
                      [&](const numbered<124>& m) { check_and_return(m); },
                      [&](const numbered<188>& m) { check_and_return(m); },
                      [&](const numbered<220>& m) { check_and_return(m); },
                      [&](const numbered<221>& m) { check_and_return(m); },
                      [&](const numbered<500>& m) { check_and_return(m); });
      }
    });
    // A foreign thread sends too: its envelopes are made off any worker and
    // freed on one, and it frees nothing itself.
    std::thread t([me, rounds] {
      for (uint32_t i = 0; i < rounds; ++i) herd::send(me, numbered<61>(2 * i));  // even: not a reply
    });
    uint32_t foreign = 0;
    for (uint32_t round = 0; round < rounds; ++round) {
      for_each_size([&]<std::size_t N>() {
        herd::send(echo, numbered<N>(round * 2));
        bool got = false;
        while (!got)
          herd::receive(
              [&](const numbered<N>& m) {
                // The foreign thread's numbered<61> share a type; told apart by parity.
                if (N == 61 && m.round % 2 == 0) {
                  if (!m.body.intact(m.round)) ++bad;
                  ++foreign;
                  return;
                }
                if (m.round != round * 2 + 1 || !m.body.intact(m.round)) ++bad;
                ++seen;
                got = true;
              },
              [&](stop) { ++bad; });
      });
    }
    while (foreign < rounds)
      herd::receive([&](const numbered<61>& m) {
        if (!m.body.intact(m.round)) ++bad;
        ++foreign;
      });
    herd::send(echo, stop{});
    herd::blocking([&] { t.join(); });
  });
  CHECK(r.is_normal());
  CHECK(bad == 0);
  CHECK(seen == uint64_t(rounds) * 10);
  CHECK(herd::node::live_messages() == before);
}

TEST_CASE("a message whose value throws while being built gives its envelope back uncounted", "[message][alloc]") {
  const std::ptrdiff_t before = herd::node::live_messages();
  int threw = 0;
  auto r = run_node(herd::test::opts(1), [&] {
    herd::pid me = herd::self();
    for (int i = 0; i < 100; ++i) {
      try {
        throws_on_copy v;
        herd::send(me, v);
      } catch (const std::runtime_error&) {
        ++threw;
      }
      herd::send(me, numbered<28>(uint32_t(i)));  // the next envelope of a class, reused or not
      herd::receive([](const numbered<28>&) {});
    }
  });
  CHECK(r.is_normal());
  CHECK(threw == 100);
  CHECK(herd::node::live_messages() == before);
}
