// herd::table<K, V>: ETS in C++ — a table of objects {K, V} that every
// process can reach, owned by the process that created it.
//
//   auto t = herd::table<uint64_t, session>::create({.name = "sessions",
//                                                    .access = herd::table_access::public_});
//   if (!t) fail(t.error().message());               // "name_taken: sessions"
//   t->insert(user, session{...});
//   if (auto s = t->lookup(user)) use(*s);
//   t->update_counter(user, &session::messages, 1);
//
// Types (table_type): set and ordered_set hold one object per key, bag holds
// distinct objects per key, duplicate_bag any number. Access as ETS: public_
// (any process reads and writes), protected_ (the owner writes, all read; the
// default), private_ (only the owner). The table ends with its owner unless
// an heir takes it over (it is sent a table_transfer); give_away hands it on.
// A handle is a cheap shared reference; after the table is deleted, calls
// through any handle throw herd::table_error, as ETS raises badarg.
//
// Order: ordered_set by key; set and bags by the key's hash, then the key —
// either way `next(k)` answers whether or not k is still there, and a scan
// (first/next, select, foldl) sees every key present from its start to its end
// exactly once, and keys inserted or erased meanwhile at most once.
// Operations never block: no lock is held while a user predicate runs or
// across a scheduling point (design in detail/store.hpp). Keys must be
// hashable (absl::Hash) and ordered (operator<); values equality-comparable
// for bags, erase_object and select_delete; in set and bag tables keys and
// values need a noexcept move (they move within a stripe).
#pragma once
#include <herd/actors/process.hpp>
#include <herd/actors/send.hpp>
#include <herd/tables/detail/table_base.hpp>
#include <herd/tables/errors.hpp>

#include <any>
#include <concepts>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace herd {

enum class table_type : uint8_t { set, ordered_set, bag, duplicate_bag };

struct table_options {
  table_type type = table_type::set;
  table_access access = table_access::protected_;
  std::string name{};           // not empty: a named table (whereis_table)
  pid heir = no_pid;            // takes the table over when the owner ends
  std::any heir_data{};         // sent to the heir with it
  bool read_concurrency = false;   // accepted for ETS users; readers never contend on one lock here
  bool write_concurrency = false;  // set and bags: 64 stripes instead of 1
};

template <class K, class V>
class table;

// The message the new owner gets, from give_away or as the heir
// (ETS's {'ETS-TRANSFER', Table, FromPid, Data}).
template <class K, class V>
struct table_transfer {
  herd::table<K, V> table;
  pid from;
  std::any data;
};

// One step of update_counter with ETS's threshold: after adding incr, a
// value beyond threshold (above it when incr >= 0, below when < 0) becomes
// set_value.
template <class N>
struct counter_step {
  N incr;
  N threshold;
  N set_value;
};

template <class K, class V>
class table {
  struct state;

 public:
  using key_type = K;
  using value_type = V;
  using object = std::pair<K, V>;

  // An empty handle (every call on it throws table_error) — for a variable
  // assigned later, or a receive that returns one.
  table() = default;

  // The calling process owns the new table (outside a process: herd::
  // not_in_process). A name already used by a live table is an error value.
  static tables::result<table> create(table_options o = {}) {
    if constexpr (!std::equality_comparable<V>)
      if (o.type == table_type::bag)
        throw table_error("herd::table::create: a bag compares values; give the value type an operator==");
    if (o.heir && o.heir == self()) o.heir = no_pid;
    unsigned bits = o.write_concurrency && o.type != table_type::ordered_set ? 6 : 0;
    auto st = std::make_shared<state>(o, bits);
    st->self_ref = st;
    if (auto r = tables::detail::adopt(st, o.heir, std::move(o.heir_data)); !r) return r.error();
    return table(std::move(st));
  }

  // The named table, if it is there with these key and value types. A named
  // table with other types is a broken contract (table_error).
  static std::optional<table> whereis(std::string_view name) {
    auto b = tables::detail::find(name);
    if (!b) return std::nullopt;
    auto st = std::dynamic_pointer_cast<state>(b);
    if (!st)
      throw table_error("herd::table::whereis(\"" + std::string(name) + "\"): the table holds " +
                        b->key_type.name() + " -> " + b->value_type.name() + ", not these types");
    return table(std::move(st));
  }

  // --- writes (the owner, or anyone for a public_ table) ---------------------

  // set: replaces the object with that key; bag: adds it unless an equal one
  // is there; duplicate_bag: adds it.
  void insert(const K& k, const V& v) { s()->check_write("insert"), s_->insert(k, v, false); }
  // Every object or none is visible to any reader (the stripes involved are
  // held together).
  void insert(const std::vector<object>& objs) { s()->check_write("insert"), s_->insert_many(objs, false); }
  // Inserts only if the key has no object; false (and nothing inserted) if
  // it has. The list form inserts nothing if any key has one.
  bool insert_new(const K& k, const V& v) { return s()->check_write("insert_new"), s_->insert(k, v, true); }
  bool insert_new(const std::vector<object>& objs) {
    return s()->check_write("insert_new"), s_->insert_many(objs, true);
  }
  // How many objects went.
  std::size_t erase(const K& k) { return s()->check_write("erase"), s_->erase(k); }
  std::size_t erase_object(const K& k, const V& v) requires std::equality_comparable<V> {
    return s()->check_write("erase_object"), s_->erase_object(k, v);
  }
  // Removes and returns the key's objects.
  std::vector<V> take(const K& k) { return s()->check_write("take"), s_->take(k); }
  void clear() { s()->check_write("clear"), s_->clear(); }

  // Atomic on the object (set and ordered_set). Without a default a missing
  // key is a broken contract (ETS: badarg); with one it is inserted first.
  // Arithmetic wraps in V's width (ETS has bignums).
  V update_counter(const K& k, V incr, std::optional<V> dflt = std::nullopt) requires std::integral<V> {
    return update_counter(k, counter_step<V>{incr, 0, 0}, std::move(dflt), false);
  }
  V update_counter(const K& k, counter_step<V> step, std::optional<V> dflt = std::nullopt) requires std::integral<V> {
    return update_counter(k, step, std::move(dflt), true);
  }
  // The same on one integral field of a struct value.
  // (C is V: spelled as a parameter so that table<int, int> still compiles.)
  template <class C, std::integral M>
    requires std::same_as<C, V>
  M update_counter(const K& k, M C::*field, std::type_identity_t<M> incr, std::optional<V> dflt = std::nullopt) {
    return counter_on(k, field, counter_step<M>{incr, 0, 0}, std::move(dflt), false);
  }
  template <class C, std::integral M>
    requires std::same_as<C, V>
  M update_counter(const K& k, M C::*field, counter_step<std::type_identity_t<M>> step,
                   std::optional<V> dflt = std::nullopt) {
    return counter_on(k, field, step, std::move(dflt), true);
  }
  // Sets one field of the key's object; false if there is none.
  template <class C, class M>
    requires std::same_as<C, V>
  bool update_element(const K& k, M C::*field, std::type_identity_t<M> value) {
    s()->check_write("update_element");
    return s_->modify("update_element", k, nullptr, [&](V& v) { return v.*field = std::move(value), true; })
        .has_value();
  }

  // Removes the objects pred(k, v) accepts; how many went. An object changed
  // after pred saw it is left alone.
  template <class Pred>
  std::size_t select_delete(Pred&& pred) requires std::equality_comparable<V> {
    s()->check_write("select_delete");
    std::size_t n = 0;
    for_chunks([&](const std::vector<object>& chunk) {
      for (const object& o : chunk)
        if (pred(o.first, o.second)) n += s_->erase_object(o.first, o.second);
    });
    return n;
  }

  // --- reads (anyone, except for a private_ table) ---------------------------

  // set and ordered_set: the object; bags: the first of them.
  std::optional<V> lookup(const K& k) const { return s()->check_read("lookup"), s_->lookup_one(k); }
  std::vector<V> lookup_all(const K& k) const {
    s()->check_read("lookup_all");
    std::vector<V> out;
    s_->lookup(k, out);
    return out;
  }
  bool member(const K& k) const { return s()->check_read("member"), s_->member(k); }
  std::size_t size() const { return s()->check_read("size"), s_->size(); }
  // Bytes the table holds: its structure and what its keys and values own.
  std::size_t memory() const { return s()->check_read("memory"), s_->memory(); }

  // Keys in the table's order; empty at the end. next/prev take any key,
  // present or not.
  std::optional<K> first() const { return s()->check_read("first"), s_->next(std::nullopt); }
  std::optional<K> next(const K& k) const { return s()->check_read("next"), s_->next(k); }
  std::optional<K> last() const { return s()->check_read("last"), s_->prev(std::nullopt); }
  std::optional<K> prev(const K& k) const { return s()->check_read("prev"), s_->prev(k); }

  // A page of select: the objects and where to go on from (empty: the end).
  struct page {
    std::vector<object> objects;
    std::optional<K> continuation;
  };
  // The objects pred(k, v) accepts, at most `limit` of them (a bag key's
  // objects are not split, so a page may hold a few more), starting after
  // `after` (a previous page's continuation). pred runs without any lock.
  template <class Pred>
  page select(Pred&& pred, std::size_t limit, std::optional<K> after = std::nullopt) const {
    s()->check_read("select");
    page pg;
    std::vector<object> chunk;
    std::optional<K> at = std::move(after);
    while (pg.objects.size() < limit) {
      chunk.clear();
      at = s_->scan(at, chunk_size, chunk);
      if (!at) return pg;
      for (std::size_t i = 0; i < chunk.size(); ++i) {
        if (pred(chunk[i].first, chunk[i].second)) pg.objects.push_back(chunk[i]);
        bool key_ends = i + 1 == chunk.size() || !(chunk[i + 1].first == chunk[i].first);
        if (pg.objects.size() >= limit && key_ends) {
          pg.continuation = chunk[i].first;  // the next page starts after this key
          return pg;
        }
      }
    }
    pg.continuation = at;
    return pg;
  }
  // Every object pred accepts.
  template <class Pred>
  std::vector<object> select(Pred&& pred) const {
    s()->check_read("select");
    std::vector<object> out;
    for_chunks([&](const std::vector<object>& chunk) {
      for (const object& o : chunk)
        if (pred(o.first, o.second)) out.push_back(o);
    });
    return out;
  }
  // acc = f(std::move(acc), k, v) over every object, in the table's order.
  template <class Acc, class F>
  Acc foldl(F&& f, Acc acc) const {
    s()->check_read("foldl");
    for_chunks([&](const std::vector<object>& chunk) {
      for (const object& o : chunk) acc = f(std::move(acc), o.first, o.second);
    });
    return acc;
  }

  // --- ownership -----------------------------------------------------------

  pid owner() const { return s()->owner.load(std::memory_order_acquire); }
  const std::string& name() const { return s()->name; }
  table_type type() const { return static_cast<table_type>(s()->kind); }
  table_access access() const { return s()->access; }
  bool deleted() const { return s()->deleted.load(std::memory_order_acquire); }
  // The owner only: `to` becomes the owner and is sent a table_transfer.
  tables::result<> give_away(pid to, std::any data = {}) {
    s()->check_owner("give_away");
    return tables::detail::give_away(*s_, to, std::move(data));
  }
  // The owner only (no_pid: none).
  void set_heir(pid heir, std::any data = {}) {
    s()->check_owner("set_heir");
    tables::detail::set_heir(*s_, heir == self() ? no_pid : heir, std::move(data));
  }
  // The owner only (or anyone for public_): deletes the table now.
  void destroy() {
    s()->check_write("destroy");
    tables::detail::destroy(*s_);
  }

  friend bool operator==(const table& a, const table& b) noexcept { return a.s_ == b.s_; }

 private:
  static constexpr std::size_t chunk_size = 256;

  struct state final : tables::detail::table_base {
    state(const table_options& o, unsigned bits)
        : table_base(o.name, static_cast<tables::detail::table_kind>(o.type), o.access, typeid(K), typeid(V)) {
      if (o.type == table_type::bag || o.type == table_type::duplicate_bag)
        many.emplace(kind, bits);
      else if (o.type == table_type::ordered_set)
        ordered.emplace(kind, bits);
      else
        one.emplace(kind, bits);
    }
    // Exactly one is there: set (hash stripes), ordered_set (a btree), bags.
    std::optional<tables::detail::store<K, V, false>> one;
    std::optional<tables::detail::store<K, V, false, true>> ordered;
    std::optional<tables::detail::store<K, V, true>> many;

    void check_owner(const char* op) const {
      if (deleted.load(std::memory_order_acquire)) refuse(op, "deleted");
      if (owner.load(std::memory_order_acquire) != self()) refuse(op, "only its owner may do this");
    }
    // store::modify on a set or ordered_set; a bag refuses.
    template <class F>
    auto modify(const char* op, const K& k, const V* dflt, F&& f) {
      if (one) return one->modify(k, dflt, f);
      if (!ordered) refuse(op, "not on a bag");
      return ordered->modify(k, dflt, f);
    }
    // One call for whichever store the table has: the branch is on flags the
    // table never changes.
    template <class F>
    decltype(auto) either(F&& f) const {
      return one ? f(*one) : ordered ? f(*ordered) : f(*many);
    }
    template <class F>
    decltype(auto) either(F&& f) {
      return one ? f(*one) : ordered ? f(*ordered) : f(*many);
    }
    bool insert(const K& k, const V& v, bool only_new) {
      return either([&](auto& s) { return s.insert(k, v, only_new); });
    }
    bool insert_many(const std::vector<object>& o, bool only_new) {
      return either([&](auto& s) { return s.insert_many(o, only_new); });
    }
    std::size_t erase(const K& k) {
      return either([&](auto& s) { return s.erase(k); });
    }
    std::size_t erase_object(const K& k, const V& v) {
      return either([&](auto& s) { return s.erase_object(k, v); });
    }
    std::vector<V> take(const K& k) {
      return either([&](auto& s) { return s.take(k); });
    }
    std::optional<V> lookup_one(const K& k) const {
      return either([&](auto& s) { return s.lookup_one(k); });
    }
    void lookup(const K& k, std::vector<V>& out) const {
      either([&](auto& s) { s.lookup(k, out); });
    }
    bool member(const K& k) const {
      return either([&](auto& s) { return s.member(k); });
    }
    std::optional<K> next(const std::optional<K>& k) const {
      return either([&](auto& s) { return s.next(k); });
    }
    std::optional<K> prev(const std::optional<K>& k) const {
      return either([&](auto& s) { return s.prev(k); });
    }
    std::optional<K> scan(const std::optional<K>& after, std::size_t max, std::vector<object>& out) const {
      return either([&](auto& s) { return s.scan(after, max, out); });
    }
    std::size_t size() const override {
      return either([&](auto& s) { return s.size(); });
    }
    std::size_t memory() const override {
      return sizeof(*this) + either([&](auto& s) { return s.memory(); });
    }
    void clear() override {
      either([&](auto& s) { s.clear(); });
    }
    void send_transfer(pid to, pid from, std::any data) override {
      herd::send(to, table_transfer<K, V>{table(std::static_pointer_cast<state>(self_ref.lock())), from,
                                          std::move(data)});
    }
    std::weak_ptr<state> self_ref;
  };

  explicit table(std::shared_ptr<state> s) : s_(std::move(s)) {}

  // The state, checked for an empty handle; every public call goes through
  // it once (then s_ directly).
  state* s() const {
    if (!s_) throw table_error("herd::table: an empty handle (default-constructed or moved from)");
    return s_.get();
  }

  template <class F>
  void for_chunks(F&& f) const {
    std::vector<object> chunk;
    std::optional<K> at;
    for (;;) {
      chunk.clear();
      at = s_->scan(at, chunk_size, chunk);
      if (!at) return;
      f(chunk);
    }
  }

  template <class N>
  static N step_value(N cur, const counter_step<N>& st, bool thresholded) {
    using U = std::make_unsigned_t<N>;
    N v = N(U(cur) + U(st.incr));
    if (thresholded && ((st.incr >= 0 && v > st.threshold) || (st.incr < 0 && v < st.threshold)))
      v = st.set_value;
    return v;
  }
  // get(V&) is the counted integer: the value itself, or one of its fields.
  template <class N, class Get>
  N count(const K& k, Get get, counter_step<N> st, std::optional<V> dflt, bool thresholded) {
    s()->check_write("update_counter");
    auto r = s_->modify("update_counter", k, dflt ? &*dflt : nullptr, [&](V& v) {
      N& n = get(v);
      return n = step_value(n, st, thresholded);
    });
    if (!r) s_->refuse("update_counter", "no object with that key and no default");
    return *r;
  }
  V update_counter(const K& k, counter_step<V> st, std::optional<V> dflt, bool thresholded) {
    return count(k, [](V& v) -> V& { return v; }, st, std::move(dflt), thresholded);
  }
  template <class C, class M>
  M counter_on(const K& k, M C::*field, counter_step<M> st, std::optional<V> dflt, bool thresholded) {
    return count(k, [field](V& v) -> M& { return v.*field; }, st, std::move(dflt), thresholded);
  }

  std::shared_ptr<state> s_;
};

}  // namespace herd
