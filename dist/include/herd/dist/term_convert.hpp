// A C++ type to and from herd::term, so a message struct crosses a node
// boundary with one declaration:
//
//   namespace app {
//   struct push { std::string user; std::string text; int64_t seq; };
//   HERD_TERM_RECORD(push, user, text, seq)        // {push, User, Text, Seq}
//   }
//   herd::term t = herd::to_term(app::push{"user42", "hello", 1});
//   herd::term_result<app::push> p = herd::from_term<app::push>(t);
//   if (!p) log(p.error().message());   // "mismatch: push.seq: expected an integer, got <<"x">>"
//
// HERD_TERM_RECORD(T, fields...) goes in T's namespace (it is found by
// argument-dependent lookup); the tuple's tag is the atom of T's name, or
// the given one with HERD_TERM_RECORD_AS(T, "tag", fields...). from_term
// needs T default-constructible. It also lets herd::send take a T to a pid
// on another node (term_registry.hpp).
//
// Built in:   int types <-> integer (a value out of the C++ type's range is a mismatch)
//             double, float <-> float (an integer is accepted too)
//             bool <-> true | false        std::string <-> binary
//             herd::atom <-> atom          herd::term <-> itself
//             std::vector<T> <-> proper list
//             std::map<K, V>, std::unordered_map<K, V> <-> map
//             std::optional<T> <-> T | undefined
//             std::pair<A, B>, std::tuple<Ts...> <-> tuple
// Anything else: specialize herd::term_mapping<T> with
//   static term to(const T&);
//   static bool from(const term&, T& out, std::string& why);  // false: why says what was wrong
#pragma once
#include <herd/dist/term.hpp>
#include <herd/dist/term_registry.hpp>

#include <concepts>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace herd {

template <class T>
struct term_mapping;

namespace detail {

template <class T, class M>
struct record_field {
  const char* name;
  M T::*ptr;
};

template <class T, class... M>
struct record_desc {
  const char* tag;
  std::tuple<record_field<T, M>...> fields;
};

template <class T, class... M>
record_desc<T, M...> make_record(const char* tag, record_field<T, M>... f) {
  return {tag, {f...}};
}

template <class T>
concept term_record = requires(const T* p) { herd_term_record(p); };

inline std::string expected(const char* what, const term& got) { return std::string("expected ") + what + ", got " + to_string(got); }

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};
template <class T>
struct is_map : std::false_type {};
template <class K, class V, class C, class A>
struct is_map<std::map<K, V, C, A>> : std::true_type {};
template <class K, class V, class H, class E, class A>
struct is_map<std::unordered_map<K, V, H, E, A>> : std::true_type {};
template <class T>
struct is_tuple_like : std::false_type {};
template <class A, class B>
struct is_tuple_like<std::pair<A, B>> : std::true_type {};
template <class... Ts>
struct is_tuple_like<std::tuple<Ts...>> : std::true_type {};

}  // namespace detail

template <class T>
struct term_mapping {
  static term to(const T& v) {
    if constexpr (std::same_as<T, term>) {
      return v;
    } else if constexpr (std::same_as<T, bool>) {
      return term::boolean(v);
    } else if constexpr (std::integral<T>) {
      return term(v);
    } else if constexpr (std::floating_point<T>) {
      return term(double(v));
    } else if constexpr (std::same_as<T, atom>) {
      return term(v);
    } else if constexpr (std::same_as<T, std::string>) {
      return term::binary(std::string_view(v));
    } else if constexpr (detail::is_optional<T>::value) {
      return v ? term_mapping<typename T::value_type>::to(*v) : term(atom("undefined"));
    } else if constexpr (detail::is_vector<T>::value) {
      std::vector<term> es;
      es.reserve(v.size());
      for (const auto& e : v) es.push_back(term_mapping<typename T::value_type>::to(e));
      return term::list(std::move(es));
    } else if constexpr (detail::is_map<T>::value) {
      std::vector<std::pair<term, term>> ps;
      ps.reserve(v.size());
      for (const auto& [k, x] : v)
        ps.emplace_back(term_mapping<typename T::key_type>::to(k), term_mapping<typename T::mapped_type>::to(x));
      return term::map(std::move(ps));
    } else if constexpr (detail::is_tuple_like<T>::value) {
      return std::apply([](const auto&... e) { return term::tuple({term_mapping<std::decay_t<decltype(e)>>::to(e)...}); }, v);
    } else if constexpr (detail::term_record<T>) {
      auto d = herd_term_record(static_cast<const T*>(nullptr));
      return std::apply(
          [&](const auto&... f) { return term::tuple({term(atom(d.tag)), term_mapping<std::decay_t<decltype(v.*(f.ptr))>>::to(v.*(f.ptr))...}); },
          d.fields);
    } else {
      static_assert(sizeof(T) == 0, "herd::to_term: no mapping for this type: HERD_TERM_RECORD or a herd::term_mapping<T>");
    }
  }

  static bool from(const term& t, T& out, std::string& why) {
    if constexpr (std::same_as<T, term>) {
      out = t;
      return true;
    } else if constexpr (std::same_as<T, bool>) {
      if (t.is_atom(atom("true"))) out = true;
      else if (t.is_atom(atom("false"))) out = false;
      else return why = detail::expected("true or false", t), false;
      return true;
    } else if constexpr (std::integral<T>) {
      std::optional<int64_t> v = t.is_integer() ? t.to_int64() : std::nullopt;
      bool fits = v && (std::is_signed_v<T> ? *v >= int64_t(std::numeric_limits<T>::min()) && *v <= int64_t(std::numeric_limits<T>::max())
                                            : *v >= 0 && uint64_t(*v) <= uint64_t(std::numeric_limits<T>::max()));
      if (!fits && t.is_integer() && !t.negative() && std::same_as<T, uint64_t>) {
        auto m = t.magnitude();  // a uint64 above INT64_MAX is a bignum
        if (m.size() <= 8) {
          uint64_t u = 0;
          for (std::size_t i = m.size(); i-- > 0;) u = (u << 8) | m[i];
          out = T(u);
          return true;
        }
      }
      if (!fits) return why = detail::expected(t.is_integer() ? "an integer in the C++ type's range" : "an integer", t), false;
      out = T(*v);
      return true;
    } else if constexpr (std::floating_point<T>) {
      if (t.is_float()) out = T(t.as_double());
      else if (t.is_integer() && t.to_int64()) out = T(*t.to_int64());
      else return why = detail::expected("a float", t), false;
      return true;
    } else if constexpr (std::same_as<T, atom>) {
      if (!t.is_atom()) return why = detail::expected("an atom", t), false;
      out = t.as_atom();
      return true;
    } else if constexpr (std::same_as<T, std::string>) {
      if (!t.is_binary()) return why = detail::expected("a binary", t), false;
      out.assign(t.bytes());
      return true;
    } else if constexpr (detail::is_optional<T>::value) {
      if (t.is_atom(atom("undefined"))) {
        out.reset();
        return true;
      }
      typename T::value_type v{};
      if (!term_mapping<typename T::value_type>::from(t, v, why)) return false;
      out = std::move(v);
      return true;
    } else if constexpr (detail::is_vector<T>::value) {
      if (!t.is_proper_list()) return why = detail::expected("a proper list", t), false;
      out.clear();
      out.reserve(t.size());
      std::size_t i = 0;
      for (const term& e : t.elements()) {
        typename T::value_type v{};
        if (!term_mapping<typename T::value_type>::from(e, v, why)) return why = "[" + std::to_string(i) + "]: " + why, false;
        out.push_back(std::move(v));
        ++i;
      }
      return true;
    } else if constexpr (detail::is_map<T>::value) {
      if (!t.is_map()) return why = detail::expected("a map", t), false;
      out.clear();
      for (const auto& [k, v] : t.pairs()) {
        typename T::key_type kk{};
        typename T::mapped_type vv{};
        if (!term_mapping<typename T::key_type>::from(k, kk, why)) return why = "key " + to_string(k) + ": " + why, false;
        if (!term_mapping<typename T::mapped_type>::from(v, vv, why)) return why = to_string(k) + " => " + why, false;
        out.emplace(std::move(kk), std::move(vv));
      }
      return true;
    } else if constexpr (detail::is_tuple_like<T>::value) {
      constexpr std::size_t n = std::tuple_size_v<T>;
      if (!t.is_tuple() || t.size() != n) return why = detail::expected(("a tuple of " + std::to_string(n)).c_str(), t), false;
      return from_elements(t, out, why, std::make_index_sequence<n>{});
    } else if constexpr (detail::term_record<T>) {
      auto d = herd_term_record(static_cast<const T*>(nullptr));
      constexpr std::size_t n = std::tuple_size_v<decltype(d.fields)>;
      if (!t.is_tuple() || t.size() != n + 1 || !t[0].is_atom(atom(d.tag)))
        return why = std::string(d.tag) + ": " + detail::expected(("{" + std::string(d.tag) + ", ...} of " + std::to_string(n + 1)).c_str(), t), false;
      std::size_t i = 1;
      bool ok = std::apply(
          [&](const auto&... f) {
            return ((term_mapping<std::decay_t<decltype(out.*(f.ptr))>>::from(t[i++], out.*(f.ptr), why) ||
                     (why = std::string(d.tag) + "." + f.name + ": " + why, false)) && ...);
          },
          d.fields);
      return ok;
    } else {
      static_assert(sizeof(T) == 0, "herd::from_term: no mapping for this type: HERD_TERM_RECORD or a herd::term_mapping<T>");
    }
  }

 private:
  template <std::size_t... I>
  static bool from_elements(const term& t, T& out, std::string& why, std::index_sequence<I...>) {
    return ((term_mapping<std::tuple_element_t<I, T>>::from(t[I], std::get<I>(out), why) ||
             (why = "element " + std::to_string(I + 1) + ": " + why, false)) && ...);
  }
};

template <class T>
term to_term(const T& v) {
  return term_mapping<T>::to(v);
}

template <class T>
term_result<T> from_term(const term& t) {
  T out{};
  std::string why;
  if (!term_mapping<T>::from(t, out, why)) return term_error{term_errc::mismatch, 0, std::move(why)};
  return out;
}

}  // namespace herd

// HERD_TERM_RECORD(T, f1, f2, ...): T <-> {t, F1, F2, ...}, T's name as the tag.
#define HERD_TERM_RECORD(T, ...) HERD_TERM_RECORD_AS(T, #T, __VA_ARGS__)
#define HERD_TERM_RECORD_AS(T, TAG, ...)                                                                  \
  [[maybe_unused]] inline auto herd_term_record(const T*) {                                              \
    return ::herd::detail::make_record<T>(TAG __VA_OPT__(, HERD_TERM_DETAIL_FOR_EACH(HERD_TERM_DETAIL_FIELD, T, __VA_ARGS__))); \
  }                                                                                                      \
  [[maybe_unused]] static const ::herd::detail::term_encoder_registration<T> HERD_TERM_DETAIL_CAT(       \
      herd_term_registration_, __COUNTER__){};
// One registration per file that sees the declaration (internal linkage:
// __COUNTER__ keeps two in one file apart, and no name is shared between files).
#define HERD_TERM_DETAIL_CAT(a, b) HERD_TERM_DETAIL_CAT2(a, b)
#define HERD_TERM_DETAIL_CAT2(a, b) a##b
#define HERD_TERM_DETAIL_FIELD(T, f) ::herd::detail::record_field<T, decltype(T::f)>{#f, &T::f}
// A for-each over __VA_ARGS__ (C++20 __VA_OPT__ recursion; up to 256 fields).
#define HERD_TERM_DETAIL_PARENS ()
#define HERD_TERM_DETAIL_EXPAND(...) HERD_TERM_DETAIL_EXPAND3(HERD_TERM_DETAIL_EXPAND3(HERD_TERM_DETAIL_EXPAND3(HERD_TERM_DETAIL_EXPAND3(__VA_ARGS__))))
#define HERD_TERM_DETAIL_EXPAND3(...) HERD_TERM_DETAIL_EXPAND2(HERD_TERM_DETAIL_EXPAND2(HERD_TERM_DETAIL_EXPAND2(HERD_TERM_DETAIL_EXPAND2(__VA_ARGS__))))
#define HERD_TERM_DETAIL_EXPAND2(...) HERD_TERM_DETAIL_EXPAND1(HERD_TERM_DETAIL_EXPAND1(HERD_TERM_DETAIL_EXPAND1(HERD_TERM_DETAIL_EXPAND1(__VA_ARGS__))))
#define HERD_TERM_DETAIL_EXPAND1(...) __VA_ARGS__
#define HERD_TERM_DETAIL_FOR_EACH(m, T, ...) __VA_OPT__(HERD_TERM_DETAIL_EXPAND(HERD_TERM_DETAIL_FOR_EACH_1(m, T, __VA_ARGS__)))
#define HERD_TERM_DETAIL_FOR_EACH_1(m, T, a, ...) m(T, a) __VA_OPT__(, HERD_TERM_DETAIL_FOR_EACH_AGAIN HERD_TERM_DETAIL_PARENS(m, T, __VA_ARGS__))
#define HERD_TERM_DETAIL_FOR_EACH_AGAIN() HERD_TERM_DETAIL_FOR_EACH_1
