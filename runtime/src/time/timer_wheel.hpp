// timer_wheel: the per-worker hierarchical timing wheel behind `receive ...
// after`, `sleep` and `send_after`.
//
// Threading. One worker thread owns a wheel. Other threads that want to cancel
// take the owner's lock first, so the wheel itself is single-threaded and has
// no atomics. Nothing here allocates: all storage is inline (6 x 64 slot heads
// + 6 occupancy words, about 3 KiB) and nodes are intrusive.
//
// Geometry. 6 levels x 64 slots. A slot at level k spans 64^k ticks and a level
// spans 64^(k+1) ticks, so level 0 is 1 tick per slot and level 5 is 2^30
// ticks per slot, 2^36 ticks (~2.2 years at 1 ms) per rotation.
//
// Placement (relative to now_). A node is placed by its "effective deadline"
// w = max(deadline, now_):
//   * k = (index of the highest bit in which w and now_ differ, counting bits
//     0..5 as "no difference") / 6, capped at 5; slot = bits [6k, 6k+6) of w.
//     So w and now_ agree on every bit above level k, and the node sits in the
//     level-k slot whose span contains w; that slot's start tick is <= w.
//   * Level 5 is a ring. Its slot s stands for the first level-5 slot-start
//     tick with index s that lies strictly after the start of now_'s own
//     level-5 slot (for s == now_'s slot that is one whole rotation ahead).
//     A w that fits within that ring goes to its own slot (exact). A w beyond
//     it ("far": w >= start of now_'s level-5 slot + 2^36) goes into now_'s own
//     level-5 slot, i.e. one full rotation ahead, which is <= w; when that slot
//     comes due its nodes are simply placed again (re-cascaded).
//
// Invariants (between calls, and at every point where user code runs):
//   I1  every linked node n (except the pending list, below) is in slot
//       (n->level, n->slot), and slot_time(level, slot) <= max(n->deadline,
//       the now_ at the time it was placed). Only level 0 slots fire, and a
//       level-0 slot's time is exactly the effective deadline of its nodes, so
//       a node never fires before its deadline.
//   I2  levels 1..4 never hold nodes in now_'s own slot; level 0 holds nodes in
//       slots >= now_'s slot only; level 5 may use any slot (ring).
//   I3  every occupied slot of level k has a slot time < every occupied slot
//       of level k+1 (a level-k slot lies inside now_'s level-(k+1) slot,
//       while occupied level-(k+1) slots come strictly after it). Hence the
//       first occupied slot of the lowest non-empty level is the globally
//       earliest one, which makes next_deadline() O(levels).
//   I4  occupied_[k] bit s is set iff slots_[k][s] != nullptr.
//
// advance(target) repeatedly takes the earliest occupied slot while its time
// is <= target: sets now_ to that time, then fires a level-0 slot node by
// node, or re-places ("cascades") the nodes of a higher-level slot, which then
// land on strictly lower levels (or, for far nodes, one rotation later on
// level 5). Empty stretches of time are skipped via the occupancy bitmaps, so
// the cost is O((fired + cascaded) + levels per step), never O(ticks). One
// more shortcut keeps far nodes from being walked around the top ring once per
// 2^36 ticks of a huge jump: when the next step is on level 5 (so levels 0..4
// are empty) and target is at least a full rotation past it, all level-5 nodes
// are detached, now_ jumps to min(earliest deadline, target) and they are
// re-placed ("rebase"; O(level-5 nodes), at most once per fired node + 1).
//
// Re-entrancy. fire() runs with the node already unlinked, and may insert(),
// remove() or re-insert any node. A node inserted while advance(target) runs
// with a deadline <= target goes onto a private pending list and is moved to
// now_'s level-0 slot when advance returns, so it fires in the *next* advance
// (a callback cannot keep the loop alive forever). Other inserts are placed
// normally relative to the intermediate now_ (which is <= target).
//
// Ordering and resolution. Level 0 is exact, so nodes fire in non-decreasing
// order of effective deadline; the order among equal effective deadlines is
// unspecified (it is the order they reached the level-0 slot). The only
// "resolution" loss is for nodes that were overdue when linked (deadline <=
// now_ at insert, or re-inserted during advance): they are placed at now_ and
// so fire in the next advance together with the nodes due at that tick.
//
// next_deadline() returns the time of the earliest occupied slot:
//   * exact (== the earliest deadline) when that slot is on level 0, i.e. the
//     earliest deadline shares now_'s 64-tick-aligned block;
//   * otherwise the start of a higher-level slot (or, for far nodes, of the
//     slot one ring rotation ahead), which is <= the true minimum and usually
//     earlier: the caller wakes up then, calls advance(), which cascades the
//     slot and fires nothing early; at most one such wake-up per level;
//   * now_ if some node is overdue (linked with deadline <= now_), even though
//     its stored deadline is smaller: "due immediately".
//   So next_deadline() <= max(now(), earliest deadline) always holds.
//
// Ticks are uint64_t and never wrap: deadline UINT64_MAX is legal (placed far
// away); slot times are computed without overflow (the ring's "one rotation
// ahead" saturates at UINT64_MAX, which only an empty slot could hit).
//
// The node type is the public herd::rt::timer_node (herd/runtime/timer_node.hpp,
// embedded in fibers). The wheel owns prev/next/deadline/level/slot/linked of a
// linked node (level 6 marks the pending list); it never touches other fields.
#pragma once

#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>

#include "herd/runtime/timer_node.hpp"  // struct herd::rt::timer_node (public: embedded in fibers)

namespace herd::rt {

static_assert(sizeof(timer_node) <= 32, "timer_node is embedded in every fiber; keep it small");

class timer_wheel {
 public:
  static constexpr unsigned k_slot_bits = 6;
  static constexpr unsigned k_slots = 1u << k_slot_bits;  // 64
  static constexpr unsigned k_levels = 6;
  static constexpr unsigned k_top = k_levels - 1;
  // One rotation of the top level: 64^6 = 2^36 ticks.
  static constexpr uint64_t k_rotation = uint64_t{1} << (k_slot_bits * k_levels);

  explicit timer_wheel(uint64_t now_tick = 0) noexcept : now_(now_tick) {}
  timer_wheel(const timer_wheel&) = delete;
  timer_wheel& operator=(const timer_wheel&) = delete;

  // Link n to fire at deadline_tick (<= now(): fires at the next advance()).
  // Precondition: !n->linked.
  void insert(timer_node* n, uint64_t deadline_tick) noexcept {
    assert(n != nullptr && !n->linked);
    n->deadline = deadline_tick;
    n->linked = true;
    ++size_;
    if (advancing_ && deadline_tick <= advance_target_) {
      // Inside advance(): must not fire in this advance (see header).
      n->level = k_pending_level;
      n->slot = 0;
      list_push_back(pending_, n);
      return;
    }
    place(n);
  }

  // Unlink n in O(1). Precondition: n->linked and n is in this wheel.
  void remove(timer_node* n) noexcept {
    assert(n != nullptr && n->linked);
    if (n->level == k_pending_level) {
      list_erase(pending_, n);
    } else {
      assert(n->level < k_levels && n->slot < k_slots);
      timer_node*& head = slots_[n->level][n->slot];
      list_erase(head, n);
      if (head == nullptr) occupied_[n->level] &= ~(uint64_t{1} << n->slot);
    }
    n->linked = false;
    --size_;
  }

  // Move time to now_tick (a smaller value is treated as now(): no time moves,
  // but nodes already due still fire) and call fire(timer_node*) for every node
  // with deadline <= now_tick, in non-decreasing effective-deadline order. Each
  // node is unlinked before fire() sees it. Not re-entrant (fire() must not
  // call advance()). During fire(), now() is the tick being fired (<= now_tick).
  template <class F>
  void advance(uint64_t now_tick, F&& fire) {
    assert(!advancing_ && "timer_wheel::advance is not re-entrant");
    const uint64_t target = now_tick > now_ ? now_tick : now_;
    advancing_ = true;
    advance_target_ = target;
    for (;;) {
      const int k = lowest_occupied_level();
      if (k < 0) break;
      const unsigned level = static_cast<unsigned>(k);
      const unsigned s = first_slot(level);
      const uint64_t t = slot_time(level, s);
      if (t > target) break;
      assert(t >= now_);
      now_ = t;
      if (level == 0) {
        // Fire one node at a time from the live slot: fire() may remove other
        // nodes of this slot. It cannot add to it: any insert with deadline
        // <= target goes to pending_, and one with deadline > target >= t is
        // placed in another slot (level-0 slot s holds only effective deadline t).
        timer_node*& head = slots_[0][s];
        while (head != nullptr) {
          timer_node* n = head;
          list_erase(head, n);
          if (head == nullptr) occupied_[0] &= ~(uint64_t{1} << s);
          n->linked = false;
          --size_;
          fire(n);
        }
      } else if (level == k_top && target - t >= k_rotation) {
        rebase(target);
      } else {
        cascade(level, s);
      }
    }
    now_ = target;
    // Nodes linked during this advance with deadline <= target: due now, fire next advance.
    while (pending_ != nullptr) {
      timer_node* n = pending_;
      list_erase(pending_, n);
      place(n);  // effective deadline = now_ -> level 0, now_'s slot
    }
    advancing_ = false;
  }

  // Earliest tick at which some node may be due; UINT64_MAX if empty. Never
  // later than max(now(), earliest deadline); exact when that is on level 0.
  uint64_t next_deadline() const noexcept {
    if (pending_ != nullptr) return now_;  // only observable from inside fire()
    const int k = lowest_occupied_level();
    if (k < 0) return UINT64_MAX;
    const unsigned level = static_cast<unsigned>(k);
    return slot_time(level, first_slot(level));
  }

  uint64_t now() const noexcept { return now_; }
  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }

  // Visit every linked node (including ones pending inside advance). f may
  // remove() the node it is given, and nothing else; nodes inserted by f may
  // or may not be visited.
  template <class F>
  void for_each(F&& f) {
    for (unsigned level = 0; level < k_levels; ++level) {
      uint64_t occ = occupied_[level];  // snapshot: f only removes
      while (occ != 0) {
        const unsigned s = static_cast<unsigned>(std::countr_zero(occ));
        occ &= occ - 1;
        visit_list(slots_[level][s], f);
      }
    }
    visit_list(pending_, f);
  }

 private:
  static constexpr uint8_t k_pending_level = k_levels;  // marks "on pending_"

  // --- circular doubly linked lists; head->prev is the tail -----------------
  static void list_push_back(timer_node*& head, timer_node* n) noexcept {
    if (head == nullptr) {
      n->prev = n->next = n;
      head = n;
    } else {
      timer_node* tail = head->prev;
      n->prev = tail;
      n->next = head;
      tail->next = n;
      head->prev = n;
    }
  }
  static void list_erase(timer_node*& head, timer_node* n) noexcept {
    if (n->next == n) {
      assert(head == n);
      head = nullptr;
    } else {
      n->prev->next = n->next;
      n->next->prev = n->prev;
      if (head == n) head = n->next;
    }
    n->prev = n->next = nullptr;
  }
  template <class F>
  static void visit_list(timer_node*& head, F& f) {
    if (head == nullptr) return;
    timer_node* const tail = head->prev;  // stop here even if f removes nodes
    timer_node* n = head;
    for (;;) {
      timer_node* const nx = n->next;
      const bool last = n == tail;
      f(n);  // may unlink n only; nx and tail stay linked
      if (last) break;
      n = nx;
    }
  }

  // --- geometry ---------------------------------------------------------------
  static constexpr unsigned shift_of(unsigned level) noexcept { return level * k_slot_bits; }

  // Level for effective deadline w >= now_ (see "Placement").
  unsigned level_for(uint64_t w) const noexcept {
    const uint64_t diff = (now_ ^ w) | (k_slots - 1);
    const unsigned top_bit = 63u - static_cast<unsigned>(std::countl_zero(diff));
    const unsigned level = top_bit / k_slot_bits;
    return level < k_top ? level : k_top;
  }

  // Start tick of now_'s level-5 slot.
  uint64_t top_slot_start() const noexcept {
    return now_ & ~((uint64_t{1} << shift_of(k_top)) - 1);
  }

  void place(timer_node* n) noexcept {
    const uint64_t w = n->deadline > now_ ? n->deadline : now_;
    const unsigned level = level_for(w);
    unsigned s;
    if (level == k_top && w - top_slot_start() >= k_rotation) {
      s = static_cast<unsigned>(now_ >> shift_of(k_top)) & (k_slots - 1);  // far: one rotation on
    } else {
      s = static_cast<unsigned>(w >> shift_of(level)) & (k_slots - 1);
    }
    n->level = static_cast<uint8_t>(level);
    n->slot = static_cast<uint8_t>(s);
    timer_node*& head = slots_[level][s];
    list_push_back(head, n);
    occupied_[level] |= uint64_t{1} << s;
  }

  int lowest_occupied_level() const noexcept {
    for (unsigned level = 0; level < k_levels; ++level)
      if (occupied_[level] != 0) return static_cast<int>(level);
    return -1;
  }

  // First occupied slot of a non-empty level, in time order. Levels 0..4 scan
  // from now_'s slot (I2: nothing occupied behind it); level 5 is a ring that
  // starts just after now_'s slot (now_'s own slot means one rotation on).
  unsigned first_slot(unsigned level) const noexcept {
    const unsigned cur = static_cast<unsigned>(now_ >> shift_of(level)) & (k_slots - 1);
    const unsigned from = level == k_top ? (cur + 1) & (k_slots - 1) : cur;
    const uint64_t rot = std::rotr(occupied_[level], static_cast<int>(from));
    const unsigned s = (from + static_cast<unsigned>(std::countr_zero(rot))) & (k_slots - 1);
    assert(level == k_top || s >= cur);
    return s;
  }

  // Start tick of slot s of the given level, relative to now_ (ring on level 5).
  uint64_t slot_time(unsigned level, unsigned s) const noexcept {
    const unsigned sh = shift_of(level);
    const uint64_t level_mask = level == k_top ? k_rotation - 1 : (uint64_t{1} << (sh + k_slot_bits)) - 1;
    uint64_t t = (now_ & ~level_mask) + (uint64_t{s} << sh);  // cannot overflow
    if (level == k_top && t <= now_) t = t > UINT64_MAX - k_rotation ? UINT64_MAX : t + k_rotation;
    return t;
  }

  // Re-place the nodes of slot (level, s) relative to now_ == its start. They
  // land on lower levels, except far nodes, which land one rotation later on
  // level 5 -- possibly in this very slot, so detach the list first.
  void cascade(unsigned level, unsigned s) noexcept {
    timer_node* head = slots_[level][s];
    slots_[level][s] = nullptr;
    occupied_[level] &= ~(uint64_t{1} << s);
    while (head != nullptr) {
      timer_node* n = head;
      list_erase(head, n);
      place(n);
    }
  }

  // Levels 0..4 are empty and target is >= a full rotation past the next
  // level-5 slot: instead of walking the ring rotation by rotation, detach all
  // of level 5, jump now_ to min(earliest deadline, target) and re-place. If the
  // jump lands on a deadline, that node fires on the next loop step; if it
  // lands on target, the loop ends. So this runs at most (fired + 1) times.
  void rebase(uint64_t target) noexcept {
    timer_node* all = nullptr;  // singly linked through next, in slot order
    timer_node* last = nullptr;
    uint64_t earliest = UINT64_MAX;
    for (unsigned s = 0; s < k_slots; ++s) {
      timer_node* head = slots_[k_top][s];
      slots_[k_top][s] = nullptr;
      while (head != nullptr) {
        timer_node* n = head;
        list_erase(head, n);
        if (n->deadline < earliest) earliest = n->deadline;
        n->next = nullptr;
        (last != nullptr ? last->next : all) = n;
        last = n;
      }
    }
    occupied_[k_top] = 0;
    const uint64_t to = earliest < target ? earliest : target;
    if (to > now_) now_ = to;  // every deadline >= its slot time >= now_
    while (all != nullptr) {
      timer_node* n = all;
      all = n->next;
      place(n);
    }
  }

  timer_node* slots_[k_levels][k_slots] = {};
  uint64_t occupied_[k_levels] = {};
  timer_node* pending_ = nullptr;
  uint64_t now_ = 0;
  uint64_t advance_target_ = 0;
  size_t size_ = 0;
  bool advancing_ = false;
};

}  // namespace herd::rt
