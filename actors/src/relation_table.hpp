// A process's links and monitors: a small set of entries keyed by a 64-bit
// key, kept inline while it has at most `Inline` of them and in an
// open-addressing hash table (linear probing, backward-shift deletion, so no
// tombstones) beyond that. Insert, find and erase are O(1) amortised, so a
// supervisor linked to 100,000 children or a server with 100,000 callers
// waiting pays per signal what a process with one relation pays (BEAM keeps
// these in trees for the same reason). The table shrinks again as entries
// go, so a process that once held many relations does not keep their memory
// (nor make its death walk an empty table).
//
// Owner only: a relation table belongs to one process and only its fiber (or
// the worker finishing it) touches it (signals.hpp).
#pragma once
#include <herd/runtime/alloc.hpp>

#include <cstdint>
#include <new>

namespace herd::detail {

// Entry: a trivially copyable struct whose first member is `uint64_t key`.
// The key ~0 is reserved (it marks a free slot).
template <class Entry, uint32_t Inline>
class relation_table {
  static_assert(Inline >= 1);

 public:
  using value_type = Entry;
  static constexpr uint64_t free_key = ~uint64_t{0};

  relation_table() noexcept {}
  ~relation_table() { clear(); }
  relation_table(const relation_table&) = delete;
  relation_table& operator=(const relation_table&) = delete;

  uint32_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  // Slots allocated on the heap (0 while inline): for tests and memory figures.
  uint32_t heap_slots() const noexcept { return mask_ ? mask_ + 1 : 0; }

  Entry* find(uint64_t key) noexcept {
    if (!mask_) {
      for (uint32_t i = 0; i < size_; ++i)
        if (inline_[i].key == key) return &inline_[i];
      return nullptr;
    }
    for (uint32_t i = home(key);; i = (i + 1) & mask_) {
      if (heap_[i].key == key) return &heap_[i];
      if (heap_[i].key == free_key) return nullptr;
    }
  }

  // False (and nothing changes) when the key is already there. Throws
  // std::bad_alloc when the table cannot grow.
  bool insert(const Entry& e) {
    if (find(e.key)) return false;
    if (!mask_) {
      if (size_ < Inline) {
        inline_[size_++] = e;
        return true;
      }
      rehash(16);
    } else if ((size_ + 1) * 4 > (mask_ + 1) * 3) {
      rehash((mask_ + 1) * 2);
    }
    put(e);
    ++size_;
    return true;
  }

  // Removes the entry with `key`, copying it to *out first. False if absent.
  bool erase(uint64_t key, Entry* out = nullptr) noexcept {
    Entry* at = find(key);
    if (!at) return false;
    if (out) *out = *at;
    --size_;
    if (!mask_) {
      *at = inline_[size_];
      return true;
    }
    remove_at(static_cast<uint32_t>(at - heap_));
    shrink_if_sparse();
    return true;
  }

  // f(const Entry&) for every entry, in no particular order. f must not
  // change the table.
  template <class F>
  void for_each(F&& f) const {
    if (!mask_) {
      for (uint32_t i = 0; i < size_; ++i) f(inline_[i]);
      return;
    }
    for (uint32_t i = 0; i <= mask_; ++i)
      if (heap_[i].key != free_key) f(heap_[i]);
  }

  void clear() noexcept {
    if (mask_) alloc::deallocate(heap_);
    mask_ = 0;
    size_ = 0;
  }

 private:
  uint32_t home(uint64_t key) const noexcept {
    // Keys are sequential in their low bits (refs, pid indexes): mix them.
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    return static_cast<uint32_t>(h >> 32) & mask_;
  }

  void put(const Entry& e) noexcept {
    uint32_t i = home(e.key);
    while (heap_[i].key != free_key) i = (i + 1) & mask_;
    heap_[i] = e;
  }

  // Backward-shift deletion: entries after the hole that would no longer be
  // reachable from their home slot move back into it.
  void remove_at(uint32_t hole) noexcept {
    for (uint32_t j = (hole + 1) & mask_; heap_[j].key != free_key; j = (j + 1) & mask_) {
      uint32_t k = home(heap_[j].key);
      // j may move to the hole unless its home lies cyclically in (hole, j].
      bool home_between = hole <= j ? (hole < k && k <= j) : (hole < k || k <= j);
      if (!home_between) {
        heap_[hole] = heap_[j];
        hole = j;
      }
    }
    heap_[hole].key = free_key;
  }

  void shrink_if_sparse() noexcept {
    uint32_t cap = mask_ + 1;
    if (size_ <= Inline / 2) {  // hysteresis: back inline well below the limit
      to_inline();
    } else if (cap > 16 && size_ * 8 < cap) {
      try {
        rehash(cap / 2);
      } catch (const std::bad_alloc&) {  // keep the larger table: still correct
      }
    }
  }

  void to_inline() noexcept {
    Entry* old = heap_;
    uint32_t cap = mask_ + 1, n = 0;
    Entry keep[Inline];
    for (uint32_t i = 0; i < cap; ++i)
      if (old[i].key != free_key) keep[n++] = old[i];
    alloc::deallocate(old);
    mask_ = 0;
    for (uint32_t i = 0; i < n; ++i) inline_[i] = keep[i];
  }

  void rehash(uint32_t cap) {
    auto* fresh = static_cast<Entry*>(alloc::allocate(sizeof(Entry) * cap));
    for (uint32_t i = 0; i < cap; ++i) fresh[i].key = free_key;
    Entry* old = mask_ ? heap_ : nullptr;
    uint32_t old_cap = mask_ ? mask_ + 1 : 0;
    Entry moved[Inline];
    uint32_t n_inline = 0;
    if (!mask_)
      for (uint32_t i = 0; i < size_; ++i) moved[n_inline++] = inline_[i];
    heap_ = fresh;
    mask_ = cap - 1;
    for (uint32_t i = 0; i < n_inline; ++i) put(moved[i]);
    for (uint32_t i = 0; i < old_cap; ++i)
      if (old[i].key != free_key) put(old[i]);
    if (old) alloc::deallocate(old);
  }

  uint32_t size_ = 0;
  uint32_t mask_ = 0;  // 0: the entries are inline_[0, size_); else heap_ has mask_ + 1 slots
  union {
    Entry inline_[Inline];
    Entry* heap_;
  };
};

}  // namespace herd::detail
