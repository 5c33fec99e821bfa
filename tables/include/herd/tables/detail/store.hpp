// The storage under herd::table<K, V>: S stripes (a power of two), each under
// its own reader-writer lock. A set or bag stripe is a sorted_hash (an
// open-addressing hash table kept in hash order, sorted_hash.hpp); an
// ordered_set's single stripe is an absl::btree_map.
//
// Order. Every object sits at a position (h, k): h is absl::Hash of the key
// with its low bit set for set and bag tables, and 0 for ordered_set; a
// stripe holds one range of h (its top bits). So the whole table is ordered
// by (h, k) — by k for ordered_set — and `next(k)` is "the first position
// after (h(k), k)", which has an answer whether or not k is still there. A
// scan (first/next, select, foldl) therefore visits every key present from
// its start to its end exactly once, and a key inserted or erased meanwhile
// at most once. That is the guarantee ETS gives only inside safe_fixtable;
// here it needs nothing. Both kinds of stripe keep that order through
// growth; equal hashes are ordered by the key's operator<.
//
// Locks. Readers take their stripe's lock shared, writers exclusive; an
// operation on many keys (insert of many) takes its stripes exclusive in
// index order, so two of them cannot deadlock. No lock is held while user
// code runs: a scan copies a chunk of objects out under the lock and the
// caller's predicate runs on the copy. Nothing here blocks in herd's sense
// (no receive, no yield), so an exit signal, which lands only at a blocking
// point, never leaves an operation half done.
//
// Memory. Each stripe allocates through a counting allocator (btree nodes,
// or the hash stripe's slot array); the bytes a key or value owns on the
// heap (a string's buffer) are added on insert and taken off on erase, so
// memory() is real bytes, counted under the same lock as the change.
#pragma once
#include <absl/container/btree_map.h>
#include <absl/container/inlined_vector.h>
#include <absl/hash/hash.h>
#include <herd/tables/detail/order.hpp>
#include <herd/tables/detail/sorted_hash.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace herd::tables::detail {

// Heap bytes an object owns beyond its own size; a user type can say its own
// with a free function `std::size_t herd_owned_bytes(const T&)` found by ADL.
template <class T>
std::size_t owned_bytes(const T& x);

template <class T>
concept has_owned_bytes = requires(const T& x) {
  { herd_owned_bytes(x) } -> std::convertible_to<std::size_t>;
};

inline std::size_t owned_bytes_of(const std::string& s) {
  // libstdc++ keeps up to 15 chars inside the object
  return s.capacity() > 15 ? s.capacity() + 1 : 0;
}
template <class T>
std::size_t owned_bytes_of(const std::vector<T>& v) {
  std::size_t n = v.capacity() * sizeof(T);
  for (const T& x : v) n += owned_bytes(x);
  return n;
}
template <class A, class B>
std::size_t owned_bytes_of(const std::pair<A, B>& p) {
  return owned_bytes(p.first) + owned_bytes(p.second);
}

template <class T>
std::size_t owned_bytes(const T& x) {
  if constexpr (has_owned_bytes<T>)
    return herd_owned_bytes(x);
  else if constexpr (requires { owned_bytes_of(x); })
    return owned_bytes_of(x);
  else
    return 0;
}

enum class table_kind : uint8_t { set, ordered_set, bag, duplicate_bag };

// One object as a scan hands it out.
template <class K, class V>
using object = std::pair<K, V>;

// Ordered: an ordered_set (one btree stripe, h = 0); else set or bag stripes.
template <class K, class V, bool Multi, bool Ordered = false>
class store {
  static_assert(!(Multi && Ordered), "ETS has no ordered bag");

 public:
  // set/ordered_set: one V per key; bag/duplicate_bag: a list of them.
  using mapped = std::conditional_t<Multi, absl::InlinedVector<V, 1>, V>;

  store(table_kind kind, unsigned stripe_bits)
      : kind_(kind), bits_(Ordered ? 0 : stripe_bits), stripes_(std::make_unique<stripe[]>(std::size_t(1) << bits_)) {
    if constexpr (!Ordered)
      for (std::size_t i = 0; i < stripe_count(); ++i) stripes_[i].map.set_shift(bits_);
  }

  table_kind kind() const noexcept { return kind_; }
  std::size_t stripe_count() const noexcept { return std::size_t(1) << bits_; }

  // The low bit set: a hash stripe marks empty slots with 0.
  uint64_t hash_of(const K& k) const {
    if constexpr (Ordered)
      return 0;
    else
      return absl::Hash<K>{}(k) | 1;
  }

  // --- writes --------------------------------------------------------------

  // set: replaces; bag: adds unless an equal object is there; duplicate_bag:
  // adds. With only_new, nothing happens if the key has any object.
  bool insert(const K& k, const V& v, bool only_new) {
    uint64_t h = hash_of(k);
    stripe& s = at(h);
    std::unique_lock g(s.lock);
    return insert_locked(s, h, k, v, only_new);
  }

  // All or nothing as seen by every reader: the stripes involved are held
  // exclusive together. With only_new, nothing is inserted if any key has an
  // object already (ETS's insert_new of a list).
  bool insert_many(const std::vector<object<K, V>>& objs, bool only_new) {
    std::vector<uint64_t> hs(objs.size());
    std::vector<bool> used(stripe_count());
    for (std::size_t i = 0; i < objs.size(); ++i) {
      hs[i] = hash_of(objs[i].first);
      used[index_of(hs[i])] = true;
    }
    std::vector<std::unique_lock<std::shared_mutex>> held;
    for (std::size_t i = 0; i < used.size(); ++i)
      if (used[i]) held.emplace_back(stripes_[i].lock);
    if (only_new)
      for (std::size_t i = 0; i < objs.size(); ++i) {
        stripe& s = stripes_[index_of(hs[i])];
        if (s.map.find(pos_ref<K>{hs[i], &objs[i].first}) != s.map.end()) return false;
      }
    for (std::size_t i = 0; i < objs.size(); ++i)
      insert_locked(stripes_[index_of(hs[i])], hs[i], objs[i].first, objs[i].second, false);
    return true;
  }

  // Removes every object with key k; returns how many.
  std::size_t erase(const K& k) {
    uint64_t h = hash_of(k);
    stripe& s = at(h);
    std::unique_lock g(s.lock);
    auto it = s.map.find(pos_ref<K>{h, &k});
    if (it == s.map.end()) return 0;
    return erase_it(s, it);
  }

  // Removes the objects {k, v} (compared with ==); returns how many.
  std::size_t erase_object(const K& k, const V& v) {
    uint64_t h = hash_of(k);
    stripe& s = at(h);
    std::unique_lock g(s.lock);
    auto it = s.map.find(pos_ref<K>{h, &k});
    if (it == s.map.end()) return 0;
    if constexpr (Multi) {
      auto& vs = it->second;
      std::size_t before = vs.size();
      for (const V& x : vs)
        if (x == v) s.heap -= int64_t(owned_bytes(x));
      vs.erase(std::remove(vs.begin(), vs.end(), v), vs.end());
      std::size_t n = before - vs.size();
      s.objects -= n;
      if (vs.empty()) erase_it(s, it);
      return n;
    } else {
      if (!(it->second == v)) return 0;
      return erase_it(s, it);
    }
  }

  // Removes and returns the objects with key k.
  std::vector<V> take(const K& k) {
    uint64_t h = hash_of(k);
    stripe& s = at(h);
    std::vector<V> out;
    std::unique_lock g(s.lock);
    auto it = s.map.find(pos_ref<K>{h, &k});
    if (it == s.map.end()) return out;
    auto [n, bytes] = weigh(it);  // before the values are moved out
    if constexpr (Multi)
      out.assign(std::make_move_iterator(it->second.begin()), std::make_move_iterator(it->second.end()));
    else
      out.push_back(std::move(it->second));
    s.map.erase(it);
    s.objects -= n;
    s.heap -= bytes;
    return out;
  }

  // Runs f(V&) on the object with key k under the stripe's exclusive lock;
  // if there is none, inserts `dflt` first when given, else returns nullopt.
  // f is herd's own code (a counter, a field), never a user callback.
  template <class F>
  auto modify(const K& k, const V* dflt, F&& f) -> std::optional<std::invoke_result_t<F, V&>>
    requires(!Multi)
  {
    uint64_t h = hash_of(k);
    stripe& s = at(h);
    std::unique_lock g(s.lock);
    auto it = s.map.find(pos_ref<K>{h, &k});
    if (it == s.map.end()) {
      if (!dflt) return std::nullopt;
      it = s.map.emplace(pos<K>{h, k}, *dflt).first;
      s.objects += 1;
      s.heap += int64_t(owned_bytes(it->first.k));
    } else {
      s.heap -= int64_t(owned_bytes(it->second));
    }
    // f changes the value; its bytes are measured after (the key's stay)
    auto r = f(it->second);
    s.heap += int64_t(owned_bytes(it->second));
    return r;
  }

  void clear() {
    for (std::size_t i = 0; i < stripe_count(); ++i) {
      stripe& s = stripes_[i];
      std::unique_lock g(s.lock);
      s.map.clear();
      s.objects = 0;
      s.heap = 0;
    }
  }

  // --- reads ---------------------------------------------------------------

  std::optional<V> lookup_one(const K& k) const {
    uint64_t h = hash_of(k);
    const stripe& s = at(h);
    std::shared_lock g(s.lock);
    auto it = s.map.find(pos_ref<K>{h, &k});
    if (it == s.map.end()) return std::nullopt;
    if constexpr (Multi)
      return it->second.front();
    else
      return it->second;
  }

  void lookup(const K& k, std::vector<V>& out) const {
    uint64_t h = hash_of(k);
    const stripe& s = at(h);
    std::shared_lock g(s.lock);
    auto it = s.map.find(pos_ref<K>{h, &k});
    if (it == s.map.end()) return;
    if constexpr (Multi)
      out.insert(out.end(), it->second.begin(), it->second.end());
    else
      out.push_back(it->second);
  }

  bool member(const K& k) const {
    uint64_t h = hash_of(k);
    const stripe& s = at(h);
    std::shared_lock g(s.lock);
    return s.map.find(pos_ref<K>{h, &k}) != s.map.end();
  }

  std::size_t size() const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < stripe_count(); ++i) {
      std::shared_lock g(stripes_[i].lock);
      n += stripes_[i].objects;
    }
    return n;
  }

  // Bytes this table holds: its stripes, the btrees' nodes and what the keys
  // and values own on the heap.
  std::size_t memory() const {
    std::size_t n = sizeof(*this) + stripe_count() * sizeof(stripe);
    for (std::size_t i = 0; i < stripe_count(); ++i) {
      std::shared_lock g(stripes_[i].lock);
      n += std::size_t(stripes_[i].nodes + stripes_[i].heap);
    }
    return n;
  }

  // The first key after `after` in the table's order (the first key when
  // `after` is empty); empty at the end.
  std::optional<K> next(const std::optional<K>& after) const {
    return from_after(after, [](const map_t&, auto it) { return it->first.k; });
  }

  // The last key before `before` (the last key when empty); empty at the
  // start. For ordered_set this is ETS's prev/last.
  std::optional<K> prev(const std::optional<K>& before) const {
    std::size_t i = stripe_count();
    uint64_t h = 0;
    if (before) {
      h = hash_of(*before);
      i = index_of(h) + 1;
    }
    while (i-- > 0) {
      const stripe& s = stripes_[i];
      std::shared_lock g(s.lock);
      auto it = before && index_of(h) == i ? s.map.lower_bound(pos_ref<K>{h, &*before}) : s.map.end();
      if (it != s.map.begin()) return std::prev(it)->first.k;
    }
    return std::nullopt;
  }

  // Copies the objects of the keys after `after` (from the start when empty)
  // into out, stopping after the key that brings it to `max` objects or more
  // (a key's objects are never split) or at the end of a stripe; returns the
  // last key copied, or empty when nothing was left. Callers loop on it.
  std::optional<K> scan(const std::optional<K>& after, std::size_t max, std::vector<object<K, V>>& out) const {
    max = std::max<std::size_t>(max, 1);
    return from_after(after, [&](const map_t& m, auto it) {
      std::size_t got = 0;
      const K* last = nullptr;
      for (; it != m.end() && got < max; ++it) {
        if constexpr (Multi) {
          for (const V& v : it->second) out.emplace_back(it->first.k, v);
          got += it->second.size();
        } else {
          out.emplace_back(it->first.k, it->second);
          ++got;
        }
        last = &it->first.k;
      }
      return *last;
    });
  }

 private:
  using alloc_t = counting_allocator<std::pair<const pos<K>, mapped>>;
  // absl::btree_map fixes 256-byte nodes, which hold only ~7 of a
  // (hash, u64 key, two-word value) table's 32-byte slots: a lookup walks
  // four levels of cache misses. 1,024-byte nodes halve the depth and the
  // per-node overhead (docs/tables.md, "Storage", has the measurement). The
  // parameter is only reachable through absl's container_internal names,
  // stable within an Abseil LTS release (Debian 12 ships 20220623).
  using tree_t = absl::container_internal::btree_map_container<absl::container_internal::btree<
      absl::container_internal::map_params<pos<K>, mapped, pos_less<K>, alloc_t,
                                           /*TargetNodeSize=*/1024, /*IsMulti=*/false>>>;
  using map_t = std::conditional_t<Ordered, tree_t, sorted_hash<K, mapped, alloc_t>>;
  struct alignas(64) stripe {
    mutable std::shared_mutex lock;
    int64_t nodes = 0;  // btree nodes or hash slots (counting_allocator)
    int64_t heap = 0;   // bytes the keys and values own
    std::size_t objects = 0;
    map_t map{alloc_t(&nodes)};
  };

  std::size_t index_of(uint64_t h) const noexcept { return bits_ ? std::size_t(h >> (64 - bits_)) : 0; }

  // Finds the first position after `after` (the start when empty) and returns
  // take(map, iterator) for it, under that stripe's shared lock; empty when
  // no object is left.
  template <class F>
  std::optional<K> from_after(const std::optional<K>& after, F&& take) const {
    std::size_t i = 0;
    uint64_t h = 0;
    if (after) {
      h = hash_of(*after);
      i = index_of(h);
    }
    for (; i < stripe_count(); ++i) {
      const stripe& s = stripes_[i];
      std::shared_lock g(s.lock);
      auto it = after && index_of(h) == i ? s.map.upper_bound(pos_ref<K>{h, &*after}) : s.map.begin();
      if (it != s.map.end()) return take(s.map, it);
    }
    return std::nullopt;
  }
  stripe& at(uint64_t h) noexcept { return stripes_[index_of(h)]; }
  const stripe& at(uint64_t h) const noexcept { return stripes_[index_of(h)]; }

  bool insert_locked(stripe& s, uint64_t h, const K& k, const V& v, bool only_new) {
    auto it = s.map.find(pos_ref<K>{h, &k});
    if (it != s.map.end()) {
      if (only_new) return false;
      if constexpr (Multi) {
        if constexpr (std::equality_comparable<V>)  // a bag of V without == is refused at creation
          if (kind_ == table_kind::bag && std::find(it->second.begin(), it->second.end(), v) != it->second.end())
            return true;
        s.heap -= list_bytes(it->second);  // push_back may move the list to a larger buffer
        it->second.push_back(v);
        s.objects += 1;
        s.heap += list_bytes(it->second) + int64_t(owned_bytes(it->second.back()));
      } else {
        // measured as stored: an assigned string keeps its own capacity
        s.heap -= int64_t(owned_bytes(it->second));
        it->second = v;
        s.heap += int64_t(owned_bytes(it->second));
      }
      return true;
    }
    if constexpr (Multi)
      it = s.map.emplace(pos<K>{h, k}, mapped{v}).first;
    else
      it = s.map.emplace(pos<K>{h, k}, v).first;
    s.objects += 1;
    s.heap += weigh(it).second;
    return true;
  }

  // A bag key's list of objects beyond the one it keeps inline (erasing
  // objects keeps the buffer, so the count changes only as it grows).
  static int64_t list_bytes(const mapped& vs) {
    if constexpr (Multi)
      return vs.capacity() > 1 ? int64_t(vs.capacity() * sizeof(V)) : 0;
    else
      return 0;
  }

  // The objects under one key and the heap bytes they, their list and the
  // key own.
  template <class It>
  static std::pair<std::size_t, int64_t> weigh(It it) {
    std::size_t n = 1;
    int64_t bytes = int64_t(owned_bytes(it->first.k));
    if constexpr (Multi) {
      n = it->second.size();
      bytes += list_bytes(it->second);
      for (const V& x : it->second) bytes += int64_t(owned_bytes(x));
    } else {
      bytes += int64_t(owned_bytes(it->second));
    }
    return {n, bytes};
  }

  template <class It>
  std::size_t erase_it(stripe& s, It it) {
    auto [n, bytes] = weigh(it);
    s.map.erase(it);
    s.objects -= n;
    s.heap -= bytes;
    return n;
  }

  table_kind kind_;
  unsigned bits_;
  std::unique_ptr<stripe[]> stripes_;
};

}  // namespace herd::tables::detail
