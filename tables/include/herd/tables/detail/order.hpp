// What both kinds of stripe share: a position in a table's order and the
// allocator that counts a stripe's bytes (store.hpp has the design).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace herd::tables::detail {

// A position in the table's order: (hash, key), compared as a pair.
template <class K>
struct pos {
  uint64_t h;
  K k;
};
template <class K>
struct pos_ref {  // the same, for a lookup that must not copy the key
  uint64_t h;
  const K* k;
};
template <class K>
struct pos_less {
  using is_transparent = void;
  static bool less(uint64_t ah, const K& ak, uint64_t bh, const K& bk) {
    if (ah != bh) return ah < bh;
    return std::less<K>{}(ak, bk);
  }
  bool operator()(const pos<K>& a, const pos<K>& b) const { return less(a.h, a.k, b.h, b.k); }
  bool operator()(const pos<K>& a, const pos_ref<K>& b) const { return less(a.h, a.k, b.h, *b.k); }
  bool operator()(const pos_ref<K>& a, const pos<K>& b) const { return less(a.h, *a.k, b.h, b.k); }
};

// Adds the bytes of every block a stripe allocates to a counter the stripe
// owns (changed only under the stripe's exclusive lock).
template <class T>
struct counting_allocator {
  using value_type = T;
  int64_t* bytes;
  explicit counting_allocator(int64_t* b) noexcept : bytes(b) {}
  template <class U>
  counting_allocator(const counting_allocator<U>& o) noexcept : bytes(o.bytes) {}
  T* allocate(std::size_t n) {
    T* p = std::allocator<T>{}.allocate(n);
    *bytes += int64_t(n * sizeof(T));
    return p;
  }
  void deallocate(T* p, std::size_t n) noexcept {
    *bytes -= int64_t(n * sizeof(T));
    std::allocator<T>{}.deallocate(p, n);
  }
  template <class U>
  bool operator==(const counting_allocator<U>& o) const noexcept { return bytes == o.bytes; }
};

}  // namespace herd::tables::detail
