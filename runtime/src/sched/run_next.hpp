// A worker's "run next" slot: the fiber the last one woke, run before the
// ring (ping-pong stays on one core). Only its owner puts; its owner takes at
// almost every pick, a thief (steal's last pass, while the owner is stuck in
// one fiber for 10 ms) takes rarely. So the owner takes without a locked
// instruction (issue 19: an uncontended one costs ~4-5 ns of a ~50 ns
// message here) and the thief pays for both, with a membarrier.
//
// owner's take:  before = thieves (acquire); f = slot; slot = null;
//                light fence; if thieves == before, even: f is the owner's.
// thief's take:  CAS thieves even n -> n + 1 (one thief at a time);
//                membarrier; f = exchange(slot, null);
//                if f: stolen = (n + 1, f); thieves = n + 2 (release).
//
// Why no fiber is taken twice or lost:
// - The membarrier makes each running thread execute a full barrier at some
//   point P of its execution before it returns (asym_fence.hpp). If the
//   owner's store of null comes before P, the thief's exchange sees it (or a
//   later put). If after, the owner's load of `thieves` after its store
//   comes after P too and sees the odd count. So a thief that took the f the
//   owner also loaded is always seen: thieves != before, or before odd.
// - `before` is loaded with acquire before the slot: an attempt that ended
//   before it left the slot empty to the owner's load, so only attempts
//   numbered from (before | 1) on can have taken the owner's f.
// - Then the owner waits for the attempt under way to end (settle: spins on
//   the odd count, which a thief holds only across one membarrier and one
//   exchange) and reads `stolen`. An attempt after the owner's store finds
//   the slot empty and records nothing, and the owner puts nothing while it
//   settles. An attempt numbered from (before | 1) on that took a fiber took
//   f, except the one under way at `before` (odd): its exchange may have
//   come before f was put and taken the fiber put before f. So the record
//   names the fiber too: f is the thief's if the record is from (before | 1)
//   on and names f. (It cannot name an earlier put of the same fiber: a
//   fiber a thief took runs only after the attempt ended, so it is not woken
//   and put again while the attempt is under way.)
// - Thieves' CAS is acq_rel, so attempts are ordered one after another and
//   the owner that acquires a later count sees every earlier record.
// - A put into an empty slot is a release store (thieves only ever empty the
//   slot, so it stays empty until then); over an occupant it is an exchange,
//   as a thief may be taking the occupant. A thief's acq_rel exchange
//   acquires the put that published the fiber's saved context; the owner
//   takes what it put itself.
// Without membarrier (asym::available() false) both sides exchange.
//
// The cost to the owner of a thief's attempt: a take that overlaps it waits
// for the membarrier (microseconds), which happens only while a worker is
// stuck, or in the test that opens every slot to thieves.
#pragma once
#include "sched/asym_fence.hpp"
#include "sched/cpu_relax.hpp"

#include <sched.h>

#include <atomic>
#include <cstdint>

namespace herd::rt {

template <class T>
class run_next_slot {
 public:
  explicit run_next_slot(bool light) noexcept : light_(light) {}
  run_next_slot(const run_next_slot&) = delete;
  run_next_slot& operator=(const run_next_slot&) = delete;

  // Any thread: a relaxed look (a hint; the monitor, the idle protocol).
  bool occupied() const noexcept { return slot_.load(std::memory_order_relaxed) != nullptr; }
  // The idle protocol's re-check after its own seq_cst RMW (worker_park.cpp).
  bool occupied_seq_cst() const noexcept { return slot_.load(std::memory_order_seq_cst) != nullptr; }

  // Owner: puts f; returns the occupant it evicted, if any.
  T* put(T* f) noexcept {
    if (!slot_.load(std::memory_order_relaxed)) {
      slot_.store(f, std::memory_order_release);
      return nullptr;
    }
    return slot_.exchange(f, std::memory_order_acq_rel);
  }

  // Owner: takes the occupant, if any.
  [[gnu::always_inline]] T* take() noexcept {
    if (!light_) [[unlikely]]
      return slot_.load(std::memory_order_relaxed) ? slot_.exchange(nullptr, std::memory_order_acq_rel) : nullptr;
    const uint64_t before = thieves_.load(std::memory_order_acquire);
    T* f = slot_.load(std::memory_order_relaxed);
    if (!f) return nullptr;
    slot_.store(nullptr, std::memory_order_relaxed);
    asym::light();
    if (thieves_.load(std::memory_order_relaxed) == before && !(before & 1)) [[likely]]
      return f;
    return settle(f, before);
  }

  // A thief: the occupant, unless it is empty or another thief is at it.
  T* steal() noexcept {
    if (!slot_.load(std::memory_order_relaxed)) return nullptr;
    if (!light_) return slot_.exchange(nullptr, std::memory_order_acq_rel);
    uint64_t n = thieves_.load(std::memory_order_relaxed);
    if ((n & 1) || !thieves_.compare_exchange_strong(n, n + 1, std::memory_order_acq_rel, std::memory_order_relaxed))
      return nullptr;
    T* f = asym::heavy() ? slot_.exchange(nullptr, std::memory_order_acq_rel) : nullptr;
    if (f) {
      stolen_item_.store(f, std::memory_order_relaxed);
      stolen_.store(n + 1, std::memory_order_relaxed);
    }
    thieves_.store(n + 2, std::memory_order_release);
    return f;
  }

  // Thieves' attempts that reached the slot (tests: was the race run?).
  uint64_t attempts() const noexcept { return thieves_.load(std::memory_order_relaxed) / 2; }

 private:
  [[gnu::noinline, gnu::cold]] T* settle(T* f, uint64_t before) noexcept {
    for (unsigned spins = 0; thieves_.load(std::memory_order_acquire) & 1; ++spins) {
      if (spins < 1024) cpu_relax();
      else sched_yield();  // the thief's thread was preempted mid-attempt
    }
    const bool theirs = stolen_.load(std::memory_order_relaxed) >= (before | 1) &&
                        stolen_item_.load(std::memory_order_relaxed) == f;
    return theirs ? nullptr : f;
  }

  // The owner's take reads both: one 16-byte block never straddles a line.
  alignas(16) std::atomic<T*> slot_{nullptr};
  std::atomic<uint64_t> thieves_{0};  // odd: attempt number `thieves_` under way
  std::atomic<uint64_t> stolen_{0};   // the last attempt that took a fiber: its number,
  std::atomic<T*> stolen_item_{nullptr};  // and the fiber
  const bool light_;
};

}  // namespace herd::rt
