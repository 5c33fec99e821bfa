// local_queue: a worker's run queue. Bounded ring of T* with one producer and
// consumer (the owning worker) and any number of thieves that steal half.
// Modelled on tokio's multi-thread scheduler queue (queue.rs); own code.
//
// State (all indices are u32 and wrap; only their differences mean anything):
//
//   head_ : std::atomic<uint64_t>
//           bits  0..31  real   index of the oldest item still in the queue;
//                              the owner's pop() and a thief's claim advance it.
//           bits 32..63  steal  == real when no steal is in flight. While a
//                              thief copies out the range it claimed, steal stays
//                              at the start of that range and real has moved past
//                              it; the slots [steal, real) are still being read
//                              and the owner must not overwrite them.
//   tail_ : std::atomic<uint32_t>  one past the newest item. Written only by
//           the owner (push_back); loaded by thieves.
//   buffer_[Capacity] : plain T* (not atomics; see "why the buffer is race-free").
//
// Queue contents: [real, tail). Owner's free space: Capacity - (tail - steal).
// Invariant: steal <= real <= tail in wrapping order, i.e.
//   (real - steal) <= (tail - steal) <= Capacity,
// and since Capacity <= 2^31 every wrapping difference is unambiguous, so the
// u32 counters may run through UINT32_MAX freely (tested via the
// local_queue(initial_index) test hook).
//
// Operations:
//   push_back (owner)  reads steal; if tail - steal < Capacity writes
//                      buffer_[tail] and publishes tail + 1.
//   pop (owner)        CAS real -> real + 1 (steal follows along if it was
//                      equal, i.e. no steal in flight), then reads the slot.
//   steal_into (thief) 1. if steal != real, another steal is in flight: give up.
//                      2. n = ceil((tail - real) / 2); CAS (steal, real) ->
//                         (steal, real + n): the range is now the thief's; the
//                         owner's pop() and other thieves start after it.
//                      3. copy buffer_[steal .. steal+n) into dst's free slots.
//                      4. CAS steal -> real (whatever real is now: the owner may
//                         have popped meanwhile): the slots are free again.
//                      5. publish n - 1 of them in dst (dst.tail_), return the last.
//   push_overflow (owner, queue full, no steal in flight)
//                      CAS (real, real) -> (real + C/2, real + C/2), then hand the
//                      C/2 claimed items + t to the sink. If a steal is in
//                      flight, the thief is about to free C/2 slots, so only t
//                      goes to the sink (like tokio).
// Only one range claim can be outstanding (step 1), and every claim or pop is a
// CAS on head_ from the exact value it was computed from, so no item is ever
// handed out twice; every item in [real, tail) is eventually popped, stolen or
// overflowed, so none is lost.
//
// Memory ordering. After construction head_ is only ever modified by RMWs
// (CAS), and a release sequence runs through RMWs of any thread, so an acquire
// load of head_ synchronizes with every release CAS at or before the value it
// reads in head_'s modification order. The pairings, referred to below:
//
//   (P) publish items. Owner: write buffer_[i], then tail_.store(release).
//       Thief: tail_.load(acquire) then read buffer_[i] for i < loaded tail.
//       Also makes everything the pusher did to *t visible to the thief.
//   (F) free slots. Thief: read its claimed slots, then the step-4 CAS
//       (release). Owner: head_.load(acquire) in push_back, which sees a steal
//       value >= the released one only by reading-from that CAS (or a later RMW
//       in its release sequence); only then does tail - steal < Capacity allow
//       writing those slots. The same holds for a thief pushing into its own
//       dst queue (its dst.head_.load(acquire) vs. other thieves' step-4 CAS).
//   (C) tail is not behind real. A thief loads head_ (acquire), checks
//       steal == real, then loads tail_ and computes tail - real. Without (C)
//       it could read a tail_ older than real and tail - real would wrap to
//       ~2^32. real reaches a value R only through (i) an owner CAS (pop,
//       overflow; release, issued after the owner's tail_ stores, which are
//       >= R), or (ii) a thief's claim, whose thief had acquired a tail_ >= R
//       and whose value (steal != real) makes readers back off without looking
//       at tail_; the matching steal == real value is then written by that
//       thief's step-4 CAS (release, after its tail_ load). Since every write
//       to head_ is an RMW, a step-4 CAS that copies an R set by (i) is also in
//       the release sequence of that owner CAS. So the acquire load of any
//       steal == real value synchronizes with a release that came after a
//       tail_ value >= R was known, and by read-read coherence the thief's
//       later tail_ load returns a value >= R. The claim itself needs no
//       release.
//
// Why the buffer is race-free as plain T*. A slot is written only by the owner
// (push_back) and only when it is outside [steal, tail), i.e. after (F) for its
// last reader. It is read (a) by the owner in pop()/push_overflow(), who wrote
// it itself (program order), or (b) by a thief only inside the range it owns by
// a successful CAS and below a tail it acquired, i.e. after (P). So every
// write/read pair on a slot is ordered by happens-before and plain accesses are
// well defined; TSan checks exactly that in the stress test (atomics would hide
// an ordering bug from it).
//
// Under TSan: no standalone fences anywhere (there are none).
//
// Nothing here allocates; buffer_ and the overflow scratch are inline (about
// 1.5 x Capacity pointers). head_ and tail_ live on separate cache lines.
#pragma once

#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>

namespace herd::rt {

template <class T, uint32_t Capacity = 256>
class local_queue {
  static_assert(Capacity >= 2 && (Capacity & (Capacity - 1)) == 0, "Capacity must be a power of two >= 2");
  static_assert(Capacity <= (uint32_t{1} << 31), "wrapping u32 differences need Capacity <= 2^31");
  static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free);

 public:
  static constexpr uint32_t capacity = Capacity;
  static constexpr uint32_t overflow_batch = Capacity / 2;  // items moved by push_overflow, plus t

  local_queue() noexcept : local_queue(0) {}
  // Test hook: start all three counters at initial_index (e.g. near UINT32_MAX).
  explicit local_queue(uint32_t initial_index) noexcept
      : head_(pack(initial_index, initial_index)), tail_(initial_index) {}
  local_queue(const local_queue&) = delete;
  local_queue& operator=(const local_queue&) = delete;

  // Owner only. False when full (then call push_overflow, or use
  // push_back_or_overflow which does the retry loop).
  bool push_back(T* t) noexcept {
    // acquire: (F) -- pairs with a thief's step-4 release CAS, so its reads of
    // the slots it freed happen before we overwrite them.
    const uint64_t head = head_.load(std::memory_order_acquire);
    // relaxed: we are the only writer of tail_ (reading our own last store).
    const uint32_t tail = tail_.load(std::memory_order_relaxed);
    if (tail - steal_of(head) >= Capacity) return false;
    buffer_[tail & k_mask] = t;
    // release: (P) -- pairs with the acquire tail_ load in steal_into; publishes
    // the slot write above (and the caller's writes to *t).
    tail_.store(tail + 1, std::memory_order_release);
    return true;
  }

  // Owner only, after push_back(t) returned false. If no steal is in flight,
  // moves the oldest Capacity/2 items plus t (last) to sink(T** items,
  // uint32_t n) in FIFO order and returns true. If a steal is in flight (it is
  // about to free Capacity/2 slots), passes only t (n == 1) and returns true.
  // Returns false, having done nothing, if the queue is no longer full or a
  // thief claimed items between our load and our CAS: retry push_back.
  // sink must not call push_overflow on this queue (it uses owner scratch).
  template <class Sink>
  bool push_overflow(T* t, Sink&& sink) noexcept {
    // relaxed: no pairing needed. We only compare and CAS this value; the
    // slots we read below are our own writes (and concurrent thieves only
    // read, which does not race); ordering our *next* slot writes after
    // thieves' reads (F) is done by push_back's own acquire load.
    uint64_t head = head_.load(std::memory_order_relaxed);
    const uint32_t real = real_of(head);
    // relaxed: own variable.
    const uint32_t tail = tail_.load(std::memory_order_relaxed);
    if (steal_of(head) != real) {
      scratch_[0] = t;
      sink(static_cast<T**>(scratch_), uint32_t{1});
      return true;
    }
    if (tail - real < Capacity) return false;  // a steal finished meanwhile: room again
    const uint32_t next = real + overflow_batch;
    // success release: (C) -- real moves forward, so a thief acquiring this
    // value must also see our tail_ stores (tail >= real). failure relaxed:
    // we only return false; the caller's push_back reloads with acquire.
    // No acquire: the slots we read next are our own writes, and no thief can
    // hold a claim on them (steal == real at the CAS).
    if (!head_.compare_exchange_strong(head, pack(next, next), std::memory_order_release,
                                       std::memory_order_relaxed))
      return false;
    for (uint32_t i = 0; i < overflow_batch; ++i) scratch_[i] = buffer_[(real + i) & k_mask];
    scratch_[overflow_batch] = t;
    sink(static_cast<T**>(scratch_), overflow_batch + 1);
    return true;
  }

  // Owner only. push_back, falling back to push_overflow; always succeeds.
  // Terminates: push_overflow fails only if room appeared or a thief claimed
  // (after which it either finds room or sees the steal in flight).
  template <class Sink>
  void push_back_or_overflow(T* t, Sink&& sink) noexcept {
    while (!push_back(t)) {
      if (push_overflow(t, sink)) return;
    }
  }

  // Owner only. FIFO pop; nullptr when empty.
  T* pop() noexcept {
    // relaxed: no pairing needed. The value is only CAS input; the slot we
    // read is our own write; (F) for later slot writes is push_back's load.
    uint64_t head = head_.load(std::memory_order_relaxed);
    for (;;) {
      const uint32_t steal = steal_of(head);
      const uint32_t real = real_of(head);
      // relaxed: own variable.
      if (real == tail_.load(std::memory_order_relaxed)) return nullptr;
      // If a steal is in flight, leave its start (steal) alone; the thief's
      // step-4 CAS will set steal = our new real.
      const uint64_t next = steal == real ? pack(real + 1, real + 1) : pack(steal, real + 1);
      // success release: (C) -- a thief whose acquire load sees this real must
      // see tail_ >= real; pairs with claim_and_copy's acquire head_ load.
      // failure relaxed: the reloaded value is only CAS input again.
      if (head_.compare_exchange_weak(head, next, std::memory_order_release, std::memory_order_relaxed))
        return buffer_[real & k_mask];  // slot index real is ours now; we wrote it
    }
  }

  // Owner thread only. The item pop() would return next, or nullptr — a hint
  // for prefetching: a thief may take it first. The slot is the owner's own
  // write, so reading it races with nothing.
  T* peek() const noexcept { return peek_at(0); }
  // Owner thread only, the same kind of hint: the item k places behind that.
  T* peek_at(uint32_t k) const noexcept {
    // relaxed: a hint.
    const uint64_t head = head_.load(std::memory_order_relaxed);
    const uint32_t real = real_of(head);
    if (tail_.load(std::memory_order_relaxed) - real <= k) return nullptr;
    return buffer_[(real + k) & k_mask];
  }

  // Any thread, as the owner of dst (dst != this). Moves ceil(n/2) of this
  // queue's n items, oldest first, into dst and returns the newest of them to
  // run at once (it is not left in dst). nullptr if nothing was stolen: this
  // queue empty, another steal in flight on it, or dst has less than
  // Capacity/2 free slots.
  T* steal_into(local_queue& dst) noexcept {
    assert(&dst != this);
    // relaxed: we own dst, so we are the only writer of dst.tail_.
    const uint32_t dst_tail = dst.tail_.load(std::memory_order_relaxed);
    // acquire: (F) for dst -- pairs with other thieves' step-4 CAS on dst, so
    // their reads of dst's slots happen before our writes to them below.
    const uint32_t dst_steal = steal_of(dst.head_.load(std::memory_order_acquire));
    if (dst_tail - dst_steal > Capacity / 2) return nullptr;  // need room for up to Capacity/2

    const uint32_t n = claim_and_copy(dst, dst_tail);
    if (n == 0) return nullptr;
    T* const ret = dst.buffer_[(dst_tail + n - 1) & k_mask];
    if (n > 1) {
      // release: (P) on dst -- pairs with the acquire tail_ load of anyone
      // stealing from dst; publishes the copies (and our view of the items).
      dst.tail_.store(dst_tail + n - 1, std::memory_order_release);
    }
    return ret;
  }

  // Any thread. Number of items, clamped to [0, Capacity]; relaxed loads of
  // two separate atomics, so only a hint (may be stale or torn between them).
  uint32_t size_approx() const noexcept {
    // relaxed (both): no pairing; the result is advisory. Clamp because the two
    // loads are not a consistent snapshot (tail may lag a newer real).
    const uint32_t real = real_of(head_.load(std::memory_order_relaxed));
    const uint32_t tail = tail_.load(std::memory_order_relaxed);
    const int32_t d = static_cast<int32_t>(tail - real);
    if (d <= 0) return 0;
    return static_cast<uint32_t>(d) > Capacity ? Capacity : static_cast<uint32_t>(d);
  }
  bool empty_approx() const noexcept { return size_approx() == 0; }

 private:
  static constexpr uint32_t k_mask = Capacity - 1;

  static constexpr uint64_t pack(uint32_t steal, uint32_t real) noexcept {
    return (uint64_t{steal} << 32) | uint64_t{real};
  }
  static constexpr uint32_t steal_of(uint64_t head) noexcept { return static_cast<uint32_t>(head >> 32); }
  static constexpr uint32_t real_of(uint64_t head) noexcept { return static_cast<uint32_t>(head); }

  // Steps 1-4 of steal_into. Copies into dst.buffer_[dst_tail ...] without
  // publishing; returns how many items were copied.
  uint32_t claim_and_copy(local_queue& dst, uint32_t dst_tail) noexcept {
    // acquire: (C) -- pairs with the release CAS (owner's pop/overflow, or a
    // thief's step 4) that wrote this value, so the tail_ we load next is >= real.
    uint64_t prev = head_.load(std::memory_order_acquire);
    uint32_t first;
    uint32_t n;
    uint64_t claimed;
    for (;;) {
      const uint32_t steal = steal_of(prev);
      const uint32_t real = real_of(prev);
      if (steal != real) return 0;  // step 1: another thief is copying
      // acquire: (P) -- pairs with push_back's release store; the slots below
      // this tail were written before it, and (with (C)) tail - real <= Capacity.
      const uint32_t tail = tail_.load(std::memory_order_acquire);
      // avail can exceed Capacity if head_ moved after our load (the owner
      // popped, then pushed more); the CAS below then fails. If it succeeds,
      // head_ was unchanged from load to CAS (an ABA would need 2^32 ops in
      // between), so tail - real <= Capacity held when we loaded tail_.
      const uint32_t avail = tail - real;
      n = avail - avail / 2;  // ceil(avail / 2)
      if (n == 0) return 0;
      claimed = pack(steal, real + n);
      // failure acquire: (C) -- the value returned feeds the next iteration
      // exactly like the initial load, pairing with the same release CASes.
      // success acquire: needed for nothing beyond what the loads above
      // established ((C) for prev, (P) for the slots); it is acquire only
      // because GCC's builtin wants failure order <= success order. No
      // release: a claim publishes nothing (see (C)).
      if (head_.compare_exchange_weak(prev, claimed, std::memory_order_acquire, std::memory_order_acquire)) {
        assert(n <= Capacity / 2 && "tail behind real? see (C)");
        first = real;
        break;
      }
    }
    // Step 3. [first, first + n) is ours: the owner will not overwrite it
    // (steal == first keeps it out of its free space) and no one else reads it.
    for (uint32_t i = 0; i < n; ++i) dst.buffer_[(dst_tail + i) & k_mask] = buffer_[(first + i) & k_mask];

    // Step 4. Release the claim: steal := real (the owner may have popped in
    // the meantime, moving real; nobody else can change steal).
    prev = claimed;
    for (;;) {
      const uint32_t real = real_of(prev);
      // success release: (F) -- pairs with the owner's acquire head_ load in
      // push_back (and, for a dst queue, a thief's acquire dst.head_ load):
      // our slot reads above happen before the next overwrite of those slots.
      // Also carries (C) for thieves that read this value. failure relaxed:
      // only the owner's pop can have moved real; the new value is only CAS
      // input again.
      if (head_.compare_exchange_weak(prev, pack(real, real), std::memory_order_release,
                                      std::memory_order_relaxed))
        return n;
    }
  }

  // Owner-side cache line: tail_ (written by owner on every push).
  // head_ is CASed by owner and thieves: its own line.
  alignas(64) std::atomic<uint64_t> head_;
  alignas(64) std::atomic<uint32_t> tail_;
  alignas(64) T* buffer_[Capacity];  // left uninitialized: a slot is never read before written
  T* scratch_[overflow_batch + 1];   // owner only: staging for push_overflow's sink
};

}  // namespace herd::rt
