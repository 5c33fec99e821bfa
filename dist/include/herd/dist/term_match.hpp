// Patterns on a term's shape, for `if` and for herd::receive:
//
//   using herd::_;
//   if (herd::match(t, herd::tuple_of("ok", _))) ...
//
//   std::string user;
//   herd::receive(
//       herd::when(herd::tuple_of("push", herd::into(user), herd::a_binary),
//                  [&](const herd::term& t) { deliver(user, t[2].bytes()); }),
//       herd::when(herd::tuple_of("ping", herd::a_pid), [](const herd::term& t) { ... }));
//
// In a pattern a string ("ok") is an atom, an integer or a double is that
// number (exactly: 1 does not match 1.0), a herd::atom or herd::term is that
// value, `_` is anything, and any callable taking `const herd::term&` and
// returning bool is a pattern (so patterns nest, and a lambda is a guard).
// into(var) matches when the term converts to var's type (term_convert.hpp)
// and stores it there — as it is reached, even if a later part of the
// pattern then fails. A pattern is a value: build it once and reuse it.
#pragma once
#include <herd/dist/term.hpp>
#include <herd/dist/term_convert.hpp>

#include <concepts>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

namespace herd {

struct wildcard {
  bool operator()(const term&) const noexcept { return true; }
};
inline constexpr wildcard _{};

namespace detail {

struct atom_is {
  atom a;
  bool operator()(const term& t) const noexcept { return t.is_atom(a); }
};
struct equals {
  term v;
  bool operator()(const term& t) const noexcept { return t == v; }
};
template <bool (term::*Test)() const noexcept>
struct kind_is {
  bool operator()(const term& t) const noexcept { return (t.*Test)(); }
};

template <class P>
auto as_pattern(P&& p) {
  using D = std::decay_t<P>;
  if constexpr (std::is_convertible_v<const D&, std::string_view>) {
    return atom_is{atom(std::string_view(p))};
  } else if constexpr (std::same_as<D, atom>) {
    return atom_is{p};
  } else if constexpr (std::same_as<D, term>) {
    return equals{p};
  } else if constexpr (std::same_as<D, bool>) {
    return equals{term::boolean(p)};
  } else if constexpr (std::integral<D>) {
    return equals{term(p)};
  } else if constexpr (std::floating_point<D>) {
    return equals{term(double(p))};
  } else if constexpr (std::is_invocable_r_v<bool, const D&, const term&>) {
    return D(std::forward<P>(p));
  } else {
    static_assert(sizeof(D) == 0, "herd pattern: a string (atom), number, herd::atom, herd::term, _ or a bool(const herd::term&)");
  }
}
template <class P>
using pattern_t = decltype(as_pattern(std::declval<P>()));

template <class... P>
struct tuple_pattern {
  std::tuple<P...> ps;
  bool operator()(const term& t) const {
    if (!t.is_tuple() || t.size() != sizeof...(P)) return false;
    return each(t.elements(), std::index_sequence_for<P...>{});
  }
  template <std::size_t... I>
  bool each(std::span<const term> es, std::index_sequence<I...>) const {
    return (std::get<I>(ps)(es[I]) && ...);
  }
};

template <class... P>
struct list_pattern {
  std::tuple<P...> ps;
  bool operator()(const term& t) const {
    if (!t.is_proper_list() || t.size() != sizeof...(P)) return false;
    return each(t.elements(), std::index_sequence_for<P...>{});
  }
  template <std::size_t... I>
  bool each(std::span<const term> es, std::index_sequence<I...>) const {
    return (std::get<I>(ps)(es[I]) && ...);
  }
};

template <class P>
struct has_pattern {
  term key;
  P p;
  bool operator()(const term& t) const {
    if (!t.is_map()) return false;
    const term* v = t.find(key);
    return v && p(*v);
  }
};

template <class T>
struct into_pattern {
  T* out;
  bool operator()(const term& t) const {
    std::string why;
    return term_mapping<T>::from(t, *out, why);
  }
};

}  // namespace detail

// {P1, P2, ...}: a tuple of exactly that arity, each element matching.
template <class... P>
auto tuple_of(P&&... ps) {
  return detail::tuple_pattern<detail::pattern_t<P>...>{{detail::as_pattern(std::forward<P>(ps))...}};
}
// [P1, P2, ...]: a proper list of exactly that length.
template <class... P>
auto list_of(P&&... ps) {
  return detail::list_pattern<detail::pattern_t<P>...>{{detail::as_pattern(std::forward<P>(ps))...}};
}
// #{Key := P}: a map with the key (a term; a string is an atom), its value matching.
template <class K, class P>
auto has_key(K&& key, P&& p) {
  term k;
  if constexpr (std::is_convertible_v<const std::decay_t<K>&, std::string_view>) k = term(atom(std::string_view(key)));
  else k = term(std::forward<K>(key));
  return detail::has_pattern<detail::pattern_t<P>>{std::move(k), detail::as_pattern(std::forward<P>(p))};
}
// Every pattern matches (has_key(...) together with a guard, say).
template <class... P>
auto all_of(P&&... ps) {
  return [tp = std::tuple<detail::pattern_t<P>...>{detail::as_pattern(std::forward<P>(ps))...}](const term& t) {
    return std::apply([&t](const auto&... p) { return (p(t) && ...); }, tp);
  };
}
// Matches when the term converts to T (from_term's rules) and stores it in `out`.
template <class T>
detail::into_pattern<T> into(T& out) {
  return {&out};
}

inline constexpr detail::kind_is<&term::is_integer> an_integer{};
inline constexpr detail::kind_is<&term::is_float> a_float{};
inline constexpr detail::kind_is<&term::is_number> a_number{};
inline constexpr detail::kind_is<&term::is_atom> an_atom{};
inline constexpr detail::kind_is<&term::is_binary> a_binary{};
inline constexpr detail::kind_is<&term::is_bitstring> a_bitstring{};
inline constexpr detail::kind_is<&term::is_list> a_list{};
inline constexpr detail::kind_is<&term::is_tuple> a_tuple{};
inline constexpr detail::kind_is<&term::is_map> a_map{};
inline constexpr detail::kind_is<&term::is_pid> a_pid{};
inline constexpr detail::kind_is<&term::is_port> a_port{};
inline constexpr detail::kind_is<&term::is_reference> a_reference{};
inline constexpr detail::kind_is<&term::is_fun> a_fun{};

template <class P>
bool match(const term& t, P&& pattern) {
  return detail::as_pattern(std::forward<P>(pattern))(t);
}

}  // namespace herd
