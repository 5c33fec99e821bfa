// Erlang's term order, exact equality and hashing.
//
// Between kinds: number < atom < reference < fun < port < pid < tuple < map
// < [] < list < bitstring. Numbers compare by value, exactly (an integer
// against a float is not rounded); where Erlang calls two equal (1 and
// 1.0) the integer comes first, so the order is total and agrees with ==.
// Tuples by arity, then elements; maps by size, then keys in order, then
// values in key order; lists element by element as cons cells ([] first);
// bitstrings bit by bit. Pids, ports and references (whose order Erlang
// does not document) by node name, then their numbers; funs by encoding.
#include "term_node.hpp"

#include <cmath>
#include <cstring>

namespace herd::detail {
namespace {

using rep = term_access::rep;
using so = std::strong_ordering;

int rank(rep r) noexcept {
  switch (r) {
    case rep::small: case rep::big: case rep::flt: return 0;
    case rep::atom: return 1;
    case rep::ref: return 2;
    case rep::fun: return 3;
    case rep::port: return 4;
    case rep::pid: return 5;
    case rep::tuple: return 6;
    case rep::map: return 7;
    case rep::nil: return 8;
    case rep::list: return 9;
    case rep::bits: return 10;
  }
  return 11;
}

template <class T>
so cmp(const T& a, const T& b) noexcept {
  return a < b ? so::less : b < a ? so::greater : so::equal;
}

// An int64 against a finite double: -1, 0, 1.
int compare_small_double(int64_t i, double d) noexcept {
  constexpr double two63 = 9223372036854775808.0;
  if (d >= two63) return -1;
  if (d < -two63) return 1;
  double fl = std::floor(d);
  auto f = int64_t(fl);  // exact: |fl| <= 2^63 and -2^63 is representable
  if (i < f) return -1;
  if (i > f) return 1;
  return d == fl ? 0 : -1;
}

so compare_magnitude(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) noexcept {
  if (a.size() != b.size()) return cmp(a.size(), b.size());
  for (std::size_t i = a.size(); i-- > 0;)
    if (a[i] != b[i]) return cmp(a[i], b[i]);
  return so::equal;
}

so flip(so o) noexcept { return o == so::less ? so::greater : o == so::greater ? so::less : so::equal; }

so compare_numbers(const term& a, const term& b) noexcept {
  rep ra = term_access::rep_of(a), rb = term_access::rep_of(b);
  if (ra == rep::small && rb == rep::small) return cmp(term_access::small(a), term_access::small(b));
  if (ra == rep::flt && rb == rep::flt) {
    double x = term_access::flt(a), y = term_access::flt(b);
    if (x != y) return cmp(x, y);
    return cmp(!std::signbit(x), !std::signbit(y));  // -0.0 before 0.0
  }
  if (ra == rep::flt) return flip(compare_numbers(b, a));
  // a is an integer.
  if (rb == rep::flt) {
    double d = term_access::flt(b);
    int c = ra == rep::small ? compare_small_double(term_access::small(a), d)
                             : compare_big_double(term_access::as<big_node>(a).neg, term_access::as<big_node>(a).mag, d);
    return c < 0 ? so::less : c > 0 ? so::greater : so::less;  // 1 before 1.0
  }
  if (ra == rep::small) return term_access::as<big_node>(b).neg ? so::greater : so::less;
  if (rb == rep::small) return term_access::as<big_node>(a).neg ? so::less : so::greater;
  auto& x = term_access::as<big_node>(a);
  auto& y = term_access::as<big_node>(b);
  if (x.neg != y.neg) return x.neg ? so::less : so::greater;
  so m = compare_magnitude(x.mag, y.mag);
  return x.neg ? flip(m) : m;
}

so compare_span(std::span<const term> a, std::span<const term> b) noexcept {
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (so c = compare(a[i], b[i]); c != 0) return c;
  return cmp(a.size(), b.size());
}

so compare_lists(const term& a, const term& b) noexcept {
  auto ea = a.elements(), eb = b.elements();
  const term& ta = a.tail();
  const term& tb = b.tail();
  std::size_t i = 0;
  for (; i < ea.size() && i < eb.size(); ++i)
    if (so c = compare(ea[i], eb[i]); c != 0) return c;
  // One side's rest is its tail (never a list); the other's is a list if it
  // has elements left (ranked after every non-list), else its tail.
  if (i < eb.size()) return cmp(rank(term_access::rep_of(ta)), rank(rep::list));
  if (i < ea.size()) return cmp(rank(rep::list), rank(term_access::rep_of(tb)));
  return compare(ta, tb);
}

so compare_bits(const bits_node& a, const bits_node& b) noexcept {
  std::size_t na = a.bytes.empty() ? 0 : (a.bytes.size() - 1) * 8 + a.last_bits;
  std::size_t nb = b.bytes.empty() ? 0 : (b.bytes.size() - 1) * 8 + b.last_bits;
  std::size_t n = std::min(na, nb);
  std::size_t whole = n / 8;
  if (int c = std::memcmp(a.bytes.data(), b.bytes.data(), whole); c != 0) return c < 0 ? so::less : so::greater;
  if (unsigned rest = n % 8) {
    auto mask = uint8_t(0xFF << (8 - rest));
    if (so c = cmp(uint8_t(a.bytes[whole] & mask), uint8_t(b.bytes[whole] & mask)); c != 0) return c;
  }
  return cmp(na, nb);
}

so compare_maps(const map_node& a, const map_node& b) noexcept {
  if (a.pairs.size() != b.pairs.size()) return cmp(a.pairs.size(), b.pairs.size());
  for (std::size_t i = 0; i < a.order.size(); ++i)
    if (so c = compare(a.pairs[a.order[i]].first, b.pairs[b.order[i]].first); c != 0) return c;
  for (std::size_t i = 0; i < a.order.size(); ++i)
    if (so c = compare(a.pairs[a.order[i]].second, b.pairs[b.order[i]].second); c != 0) return c;
  return so::equal;
}

}  // namespace

std::strong_ordering compare(const term& a, const term& b) noexcept {
  rep ra = term_access::rep_of(a), rb = term_access::rep_of(b);
  if (int x = rank(ra), y = rank(rb); x != y) return cmp(x, y);
  switch (ra) {
    case rep::small: case rep::big: case rep::flt: return compare_numbers(a, b);
    case rep::atom: return atom::from_index(term_access::atom_index(a)) <=> atom::from_index(term_access::atom_index(b));
    case rep::nil: return so::equal;
    case rep::tuple: {
      if (a.size() != b.size()) return cmp(a.size(), b.size());
      return compare_span(a.elements(), b.elements());
    }
    case rep::list: return compare_lists(a, b);
    case rep::map:
      if (term_access::node(a) == term_access::node(b)) return so::equal;
      return compare_maps(term_access::as<map_node>(a), term_access::as<map_node>(b));
    case rep::bits: return compare_bits(term_access::as<bits_node>(a), term_access::as<bits_node>(b));
    case rep::pid: {
      auto& x = a.as_pid();
      auto& y = b.as_pid();
      if (so c = x.node <=> y.node; c != 0) return c;
      if (so c = cmp(x.id, y.id); c != 0) return c;
      if (so c = cmp(x.serial, y.serial); c != 0) return c;
      return cmp(x.creation, y.creation);
    }
    case rep::port: {
      auto& x = a.as_port();
      auto& y = b.as_port();
      if (so c = x.node <=> y.node; c != 0) return c;
      if (so c = cmp(x.id, y.id); c != 0) return c;
      return cmp(x.creation, y.creation);
    }
    case rep::ref: {
      auto& x = a.as_reference();
      auto& y = b.as_reference();
      if (so c = x.node <=> y.node; c != 0) return c;
      if (so c = cmp(x.len, y.len); c != 0) return c;
      for (int i = x.len; i-- > 0;)
        if (so c = cmp(x.ids[i], y.ids[i]); c != 0) return c;
      return cmp(x.creation, y.creation);
    }
    case rep::fun: {
      int c = a.fun_encoding().compare(b.fun_encoding());
      return c < 0 ? so::less : c > 0 ? so::greater : so::equal;
    }
  }
  return so::equal;
}

}  // namespace herd::detail

namespace herd {

using detail::term_access;

bool operator==(const term& a, const term& b) noexcept {
  if (a.rep_ != b.rep_) return false;
  switch (a.rep_) {
    case term::rep::small: return a.u_.i == b.u_.i;
    case term::rep::flt: return std::memcmp(&a.u_.d, &b.u_.d, sizeof(double)) == 0;
    case term::rep::atom: return a.aux_ == b.aux_;
    case term::rep::nil: return true;
    default:
      if (a.u_.p == b.u_.p) return true;
      return detail::compare(a, b) == 0;
  }
}

std::strong_ordering operator<=>(const term& a, const term& b) noexcept { return detail::compare(a, b); }

namespace {
inline std::size_t mix(std::size_t h, std::size_t v) noexcept {
  return (h ^ v) * 0x100000001b3ull + (h >> 29);
}
std::size_t hash_bytes(std::string_view s) noexcept { return std::hash<std::string_view>{}(s); }
}  // namespace

std::size_t term::hash() const noexcept {
  std::size_t h = mix(0xcbf29ce484222325ull, std::size_t(rep_));
  switch (rep_) {
    case rep::small: return mix(h, std::hash<int64_t>{}(u_.i));
    case rep::flt: return mix(h, std::hash<double>{}(u_.d) ^ (std::signbit(u_.d) ? 1 : 0));
    case rep::atom: return mix(h, aux_);  // an atom's index never changes
    case rep::nil: return h;
    case rep::big: {
      auto& b = term_access::as<detail::big_node>(*this);
      return mix(mix(h, b.neg), hash_bytes({reinterpret_cast<const char*>(b.mag.data()), b.mag.size()}));
    }
    case rep::tuple:
    case rep::list:
      for (const term& e : elements()) h = mix(h, e.hash());
      return rep_ == rep::list ? mix(h, tail().hash()) : h;
    case rep::map: {
      auto& m = term_access::as<detail::map_node>(*this);
      for (uint32_t i : m.order) h = mix(mix(h, m.pairs[i].first.hash()), m.pairs[i].second.hash());
      return h;
    }
    case rep::bits: return mix(mix(h, bit_size()), hash_bytes(bytes()));
    case rep::pid: {
      auto& p = as_pid();
      return mix(mix(mix(mix(h, p.node.index()), p.id), p.serial), p.creation);
    }
    case rep::port: {
      auto& p = as_port();
      return mix(mix(mix(h, p.node.index()), p.id), p.creation);
    }
    case rep::ref: {
      auto& r = as_reference();
      h = mix(mix(h, r.node.index()), r.creation);
      for (uint32_t w : r.words()) h = mix(h, w);
      return h;
    }
    case rep::fun: return mix(h, hash_bytes(fun_encoding()));
  }
  return h;
}

}  // namespace herd
