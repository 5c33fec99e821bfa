// A stripe of a set or bag table: a hash table that keeps its objects in
// (h, k) order, so that next(k) stays exact and a scan keeps the guarantee
// store.hpp's header gives — as the btree it replaces for these kinds did,
// at a probe or two per lookup instead of a walk down a tree.
//
// Open addressing with linear probing, kept sorted. An object's home slot is
// floor(h' * cap / 2^64), h' being h without the stripe's top bits, so homes
// rise with h. Two invariants:
//  1. the occupied slots, read left to right, are in (h, k) order;
//  2. an object sits at or after its home, and every slot from its home up to
//     it is occupied.
// A probe for x from home(x) stops at the first empty slot or the first
// object not below x: x is there or nowhere, and that slot is where x goes.
// Insert shifts the run from there to the next empty slot one to the right
// (Robin Hood's order, equal homes ordered by hash then key); erase shifts
// the following objects that sit past their homes one to the left. Nothing
// wraps around: runs that pass the last home slot spill into a tail, and the
// array ends in an always-empty sentinel slot that stops every probe.
//
// Equal full hashes are ordered by the key's operator< (tables already ask
// keys for one), so no side chain is needed. A set or bag hash has its low
// bit set (store.hpp), so h == 0 marks an empty slot.
//
// Growth keeps the order: the objects are laid down again left to right,
// each at max(its new home, the previous object's slot + 1). Capacity grows
// by half above 7/8 full (memory per object stays under 1.75 slots just after
// a growth), halves below 1/4, and the array is freed when the last object
// goes, so memory() returns to the empty table's. Objects move when others
// come and go, so keys and values need a nothrow move; objects that are
// trivially copyable move by memmove.
#pragma once
#include <herd/tables/detail/order.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace herd::tables::detail {

template <class K, class M, class Alloc>
class sorted_hash {
 public:
  struct key_box {
    K k;
  };
  // Read as the btree's value is (it->first.k, it->second), so store.hpp
  // treats both kinds of stripe alike.
  struct node {
    key_box first;
    M second;
  };
  static_assert(std::is_nothrow_move_constructible_v<node>,
                "herd::table (set, bag): keys and values move when others are inserted; "
                "give them a noexcept move constructor");

 private:
  struct slot {
    uint64_t h = 0;  // 0: empty
    alignas(node) unsigned char raw[sizeof(node)];
    node& n() noexcept { return *std::launder(reinterpret_cast<node*>(raw)); }
    const node& n() const noexcept { return *std::launder(reinterpret_cast<const node*>(raw)); }
  };
  using slot_alloc = typename std::allocator_traits<Alloc>::template rebind_alloc<slot>;
  static constexpr bool relocatable = std::is_trivially_copyable_v<node>;
  static constexpr std::size_t min_cap = 8;

 public:
  template <bool Const>
  class iter {
    using S = std::conditional_t<Const, const slot, slot>;

   public:
    using iterator_category = std::bidirectional_iterator_tag;
    using value_type = node;
    using difference_type = std::ptrdiff_t;
    using pointer = std::conditional_t<Const, const node*, node*>;
    using reference = std::conditional_t<Const, const node&, node&>;

    iter() = default;
    template <bool C = Const>
      requires C
    iter(const iter<false>& o) : p_(o.p_), end_(o.end_) {}
    reference operator*() const { return p_->n(); }
    pointer operator->() const { return &p_->n(); }
    iter& operator++() {
      do ++p_;
      while (p_ != end_ && p_->h == 0);
      return *this;
    }
    iter operator++(int) {
      iter t = *this;
      ++*this;
      return t;
    }
    // Only from past the first object (as std::prev on a btree).
    iter& operator--() {
      do --p_;
      while (p_->h == 0);
      return *this;
    }
    iter operator--(int) {
      iter t = *this;
      --*this;
      return t;
    }
    friend bool operator==(const iter& a, const iter& b) noexcept { return a.p_ == b.p_; }

   private:
    friend class sorted_hash;
    template <bool>
    friend class iter;
    iter(S* p, S* end) : p_(p), end_(end) {}
    S* p_ = nullptr;
    S* end_ = nullptr;
  };
  using iterator = iter<false>;
  using const_iterator = iter<true>;

  explicit sorted_hash(const Alloc& a) : alloc_(a) {}
  ~sorted_hash() { release(); }
  sorted_hash(const sorted_hash&) = delete;
  sorted_hash& operator=(const sorted_hash&) = delete;

  // How many top bits of h pick the stripe (they are equal for every object
  // here, so homes use the bits below them). Set before the first insert.
  void set_shift(unsigned bits) noexcept { shift_ = bits; }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  // Slots, the tail and the sentinel included (for tests and tuning).
  std::size_t slot_count() const noexcept { return slots_ == &none_ ? 0 : len_ + 1; }

  iterator begin() noexcept { return at_or_after(0); }
  const_iterator begin() const noexcept { return at_or_after(0); }
  iterator end() noexcept { return {slots_ + len_, slots_ + len_}; }
  const_iterator end() const noexcept { return {slots_ + len_, slots_ + len_}; }

  iterator find(const pos_ref<K>& x) noexcept {
    std::size_t i = locate(x.h, *x.k);
    return hit(i, x.h, *x.k) ? iterator{slots_ + i, slots_ + len_} : end();
  }
  const_iterator find(const pos_ref<K>& x) const noexcept {
    std::size_t i = locate(x.h, *x.k);
    return hit(i, x.h, *x.k) ? const_iterator{slots_ + i, slots_ + len_} : end();
  }
  // The first object not below x / above x.
  const_iterator lower_bound(const pos_ref<K>& x) const noexcept { return at_or_after(locate(x.h, *x.k)); }
  const_iterator upper_bound(const pos_ref<K>& x) const noexcept {
    std::size_t i = locate(x.h, *x.k);
    return at_or_after(hit(i, x.h, *x.k) ? i + 1 : i);
  }

  // Inserts {p, M(a...)} unless p is there; iterators are invalid after.
  // If building the object or growing throws, nothing has changed.
  template <class... A>
  std::pair<iterator, bool> emplace(pos<K>&& p, A&&... a) {
    const uint64_t h = p.h;
    std::size_t i = locate(h, p.k);
    if (hit(i, h, p.k)) return {iterator{slots_ + i, slots_ + len_}, false};
    node fresh{{std::move(p.k)}, M(std::forward<A>(a)...)};
    if (size_ + 1 > cap_ - cap_ / 8) {
      rehash(cap_ ? cap_ + cap_ / 2 : min_cap, default_slack(cap_ ? cap_ + cap_ / 2 : min_cap));
      i = locate(h, fresh.first.k);
    }
    std::size_t j = next_empty(i);
    if (j == len_) {  // the run reaches the sentinel: a longer tail
      rehash(cap_, slack_ * 2);
      i = locate(h, fresh.first.k);
      j = next_empty(i);
    }
    shift_right(i, j);
    ::new (static_cast<void*>(slots_[i].raw)) node(std::move(fresh));
    slots_[i].h = h;
    ++size_;
    return {iterator{slots_ + i, slots_ + len_}, true};
  }

  // Iterators are invalid after (the array may shrink).
  void erase(const_iterator it) noexcept {
    std::size_t i = std::size_t(it.p_ - slots_);
    slots_[i].n().~node();
    std::size_t j = i + 1;
    while (slots_[j].h != 0 && home(slots_[j].h, cap_) < j) ++j;
    shift_left(i, j);
    slots_[j - 1].h = 0;
    if (--size_ == 0)
      release();
    else if (cap_ > min_cap && size_ < cap_ / 4)
      try {
        rehash(cap_ / 2, default_slack(cap_ / 2));
      } catch (...) {  // no memory to shrink into: keep the larger array
      }
  }

  void clear() noexcept { release(); }

 private:
  static std::size_t default_slack(std::size_t cap) noexcept { return 8 + cap / 64; }

  // Monotone in h: the bits below the stripe's, scaled to [0, cap).
  std::size_t home(uint64_t h, std::size_t cap) const noexcept {
    __extension__ using u128 = unsigned __int128;
    return std::size_t((u128(h << shift_) * cap) >> 64);
  }

  // The first slot from x's home that is empty or holds an object not below x.
  std::size_t locate(uint64_t h, const K& k) const noexcept {
    std::size_t i = home(h, cap_);
    for (;; ++i) {
      uint64_t sh = slots_[i].h;
      if (sh == 0 || sh > h) return i;
      if (sh == h && !std::less<K>{}(slots_[i].n().first.k, k)) return i;
    }
  }
  // Whether the slot locate found holds x itself.
  bool hit(std::size_t i, uint64_t h, const K& k) const noexcept {
    return slots_[i].h == h && !std::less<K>{}(k, slots_[i].n().first.k);
  }
  std::size_t next_empty(std::size_t i) const noexcept {
    while (slots_[i].h != 0) ++i;
    return i;
  }
  iterator at_or_after(std::size_t i) noexcept {
    while (i < len_ && slots_[i].h == 0) ++i;
    return {slots_ + i, slots_ + len_};
  }
  const_iterator at_or_after(std::size_t i) const noexcept {
    while (i < len_ && slots_[i].h == 0) ++i;
    return {slots_ + i, slots_ + len_};
  }

  // Moves slot t's object (and hash) to the empty slot d.
  void move_slot(std::size_t d, std::size_t t) noexcept {
    ::new (static_cast<void*>(slots_[d].raw)) node(std::move(slots_[t].n()));
    slots_[d].h = slots_[t].h;
    slots_[t].n().~node();
  }
  // Objects in [i, j) go one right; slot j was empty, slot i is left unused.
  void shift_right(std::size_t i, std::size_t j) noexcept {
    if constexpr (relocatable) {
      std::memmove(static_cast<void*>(slots_ + i + 1), static_cast<const void*>(slots_ + i), (j - i) * sizeof(slot));
    } else {
      for (std::size_t t = j; t > i; --t) move_slot(t, t - 1);
    }
  }
  // Objects in (i, j) go one left; slot i's object is already destroyed.
  void shift_left(std::size_t i, std::size_t j) noexcept {
    if constexpr (relocatable) {
      std::memmove(static_cast<void*>(slots_ + i), static_cast<const void*>(slots_ + i + 1),
                   (j - i - 1) * sizeof(slot));
    } else {
      for (std::size_t t = i; t + 1 < j; ++t) move_slot(t, t + 1);
    }
  }

  // Lays the objects down again in a new array of `cap` home slots; the
  // order is kept (see the header). Throws only before anything moved.
  void rehash(std::size_t cap, std::size_t slack) {
    std::size_t next = 0;
    for (std::size_t i = 0; i < len_; ++i)
      if (slots_[i].h) next = std::max(home(slots_[i].h, cap), next) + 1;
    std::size_t len = std::max(next, cap) + slack;
    slot* fresh = std::allocator_traits<slot_alloc>::allocate(alloc_, len + 1);
    for (std::size_t t = 0; t <= len; ++t) ::new (static_cast<void*>(fresh + t)) slot{};
    next = 0;
    for (std::size_t i = 0; i < len_; ++i) {
      if (!slots_[i].h) continue;
      std::size_t p = std::max(home(slots_[i].h, cap), next);
      ::new (static_cast<void*>(fresh[p].raw)) node(std::move(slots_[i].n()));
      fresh[p].h = slots_[i].h;
      slots_[i].n().~node();
      next = p + 1;
    }
    if (slots_ != &none_) std::allocator_traits<slot_alloc>::deallocate(alloc_, slots_, len_ + 1);
    slots_ = fresh;
    cap_ = cap;
    len_ = len;
    slack_ = slack;
  }

  void release() noexcept {
    if (slots_ == &none_) return;
    if constexpr (!std::is_trivially_destructible_v<node>)
      for (std::size_t i = 0; i < len_; ++i)
        if (slots_[i].h) slots_[i].n().~node();
    std::allocator_traits<slot_alloc>::deallocate(alloc_, slots_, len_ + 1);
    slots_ = &none_;
    cap_ = len_ = size_ = 0;
  }

  slot_alloc alloc_;
  slot none_{};          // the sentinel of an empty table (no array)
  slot* slots_ = &none_;  // len_ + 1 slots, the last always empty
  std::size_t cap_ = 0;   // home slots
  std::size_t len_ = 0;   // home slots and the tail
  std::size_t size_ = 0;
  std::size_t slack_ = 0;  // free tail slots a rehash leaves past the last object
  unsigned shift_ = 0;
};

}  // namespace herd::tables::detail
