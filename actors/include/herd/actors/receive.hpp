// Selective receive, with Erlang's semantics: the mailbox is scanned oldest
// first; for each message the handlers are tried in order and the first
// message some handler accepts is taken. Messages no handler accepts stay, in
// their order, for a later receive.
//
//   herd::receive(
//       [](const ping& p) { ... },                         // by type
//       herd::when([](const job& j) { return j.urgent; },  // by type and guard
//                  [](job j) { ... }),
//       herd::after(5s, [] { ... }));                      // timeout (last)
//
// A handler's parameter decides the message type (by value, T&, const T& or
// T&&; a value is moved out). A generic lambda (`[](auto x)`) decides none
// and does not compile: take `const herd::any_message&` for every message. A
// string literal sent arrives as std::string. receive returns what the handlers return (they
// must agree), or void.
//
// From a process only: elsewhere receive, receive_after and mark_mailbox
// throw herd::not_in_process (<herd/actors/process.hpp>). receive is a
// blocking point: an exit signal that arrived is acted on here (the stack
// unwinds). Reached while that exit is
// unwinding the stack (a destructor that receives), it neither blocks nor
// throws: it behaves as if `after(0)` were given. While an ordinary exception
// unwinds, a destructor may receive and block as usual (like Erlang's
// try ... after).
#pragma once
#include <herd/actors/message.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

namespace herd {

inline constexpr std::chrono::milliseconds infinity = std::chrono::milliseconds::max();

template <class F>
struct after_clause {
  std::chrono::milliseconds timeout;
  F fn;
};

template <class F>
after_clause<std::decay_t<F>> after(std::chrono::milliseconds timeout, F&& fn) {
  return {timeout, std::forward<F>(fn)};
}

inline auto after(std::chrono::milliseconds timeout) {
  return after(timeout, [] {});
}

template <class P, class F>
struct guarded {
  P pred;
  F fn;
};

template <class P, class F>
guarded<std::decay_t<P>, std::decay_t<F>> when(P&& pred, F&& fn) {
  return {std::forward<P>(pred), std::forward<F>(fn)};
}

// A handler taking `any_message` (by value or const&) accepts every message:
// Erlang's `_ ->` clause. It is a view, valid during the handler: ask for the
// type's name, test for a type, or read the value.
//
//   herd::receive([](const job& j) { ... },
//                 [](const herd::any_message& m) { log("unexpected", m.type_name()); });
class any_message {
 public:
  explicit any_message(detail::message* m) noexcept : m_(m) {}
  std::string_view type_name() const noexcept { return {m_->ops->name, m_->ops->name_len}; }
  template <class T>
  bool is() const noexcept { return m_->type == detail::type_id<T>; }
  // nullptr unless the message is a T.
  template <class T>
  T* get() const noexcept { return is<T>() ? &m_->template as<T>() : nullptr; }

 private:
  detail::message* m_;
};

// A position in the mailbox: receive_after(mark, ...) looks only at messages
// that arrived after it — a reply behind 100,000 unmatched messages is found
// in O(1) (BEAM's receive marker). One mark per process; a new one replaces it.
struct receive_mark {
  uint64_t serial = 0;
};

namespace detail {

// What a handler takes and returns. `concrete`: it takes exactly one
// parameter of a named type. A generic lambda (`[](auto x)`), a callable
// with overloads or with several parameters is not: receive cannot tell
// which messages it takes (receive_impl says so at compile time).
template <class F, class = void>
struct fn_traits {
  using arg = any_message;  // unused: receive_impl's static_assert fails first
  using result = void;
  static constexpr bool concrete = false;
};
template <class F>
struct fn_traits<F, std::void_t<decltype(&F::operator())>> : fn_traits<decltype(&F::operator())> {};
template <class R, class A>
struct fn_traits_of {
  using arg = A;
  using result = R;
  static constexpr bool concrete = true;
};
template <class C, class R, class A>
struct fn_traits<R (C::*)(A) const> : fn_traits_of<R, A> {};
template <class C, class R, class A>
struct fn_traits<R (C::*)(A)> : fn_traits_of<R, A> {};
template <class C, class R, class A>
struct fn_traits<R (C::*)(A) const noexcept> : fn_traits_of<R, A> {};
template <class C, class R, class A>
struct fn_traits<R (C::*)(A) noexcept> : fn_traits_of<R, A> {};
template <class R, class A>
struct fn_traits<R (*)(A)> : fn_traits_of<R, A> {};
template <class R, class A>
struct fn_traits<R (*)(A) noexcept> : fn_traits_of<R, A> {};

template <class H>
struct handler_traits : fn_traits<std::decay_t<H>> {
  static constexpr bool has_guard = false;
  template <class T>
  static bool guard(H&, const T&) { return true; }
  static auto& fn(H& h) { return h; }
};
template <class P, class F>
struct handler_traits<guarded<P, F>> : fn_traits<F> {
  static constexpr bool has_guard = true;
  template <class T>
  static bool guard(guarded<P, F>& g, const T& v) { return static_cast<bool>(g.pred(v)); }
  static auto& fn(guarded<P, F>& g) { return g.fn; }
};

template <class T>
struct is_after : std::false_type {};
template <class F>
struct is_after<after_clause<F>> : std::true_type {};

template <class H>
using handler_arg_t = typename handler_traits<std::decay_t<H>>::arg;
template <class H>
using handler_value_t = std::remove_cvref_t<handler_arg_t<H>>;
template <class H>
using handler_result_t = typename handler_traits<std::decay_t<H>>::result;

// A non-owning callable reference for the scan loop in receive.cpp.
struct matcher {
  bool (*test)(void* ctx, message* m);
  void* ctx;
};

// From a process. Returns the first matching message (unlinked, owned by the
// caller), or nullptr when the deadline passed. Throws exit_unwind when an
// exit signal is pending (unless already unwinding).
message* receive_scan(matcher m, uint64_t deadline_ms, bool from_mark);
uint64_t receive_deadline(std::chrono::milliseconds timeout) noexcept;
receive_mark make_mark();

struct message_owner {
  message* m;
  ~message_owner() { destroy_message(m); }
};

template <class Tuple, std::size_t I>
bool try_handler(Tuple& hs, message* m) {
  using H = std::tuple_element_t<I, Tuple>;
  using T = handler_value_t<H>;
  if constexpr (std::is_same_v<T, any_message>) {
    if constexpr (handler_traits<std::decay_t<H>>::has_guard)
      return handler_traits<std::decay_t<H>>::guard(std::get<I>(hs), any_message{m});
    return true;
  } else {
    if (m->type != type_id<T>) return false;
    if constexpr (handler_traits<std::decay_t<H>>::has_guard)
      return handler_traits<std::decay_t<H>>::guard(std::get<I>(hs), m->as<T>());
    return true;
  }
}

template <class Tuple, std::size_t... I>
int match_index([[maybe_unused]] Tuple& hs, [[maybe_unused]] message* m, std::index_sequence<I...>) {
  int idx = -1;
  (void)((try_handler<Tuple, I>(hs, m) ? (idx = int(I), true) : false) || ...);
  return idx;
}

template <class Tuple, std::size_t I>
decltype(auto) call_handler(Tuple& hs, message* m) {
  using H = std::tuple_element_t<I, Tuple>;
  using A = handler_arg_t<H>;
  using T = handler_value_t<H>;
  if constexpr (std::is_same_v<T, any_message>) {
    any_message view{m};
    return handler_traits<std::decay_t<H>>::fn(std::get<I>(hs))(static_cast<A&&>(view));
  } else {
    return handler_traits<std::decay_t<H>>::fn(std::get<I>(hs))(static_cast<A&&>(m->as<T>()));
  }
}

template <class R, class Tuple, std::size_t... I>
R dispatch(Tuple& hs, int idx, message* m, std::index_sequence<I...>) {
  if constexpr (std::is_void_v<R>) {
    (void)((idx == int(I) ? (call_handler<Tuple, I>(hs, m), true) : false) || ...);
  } else {
    std::optional<R> r;
    (void)((idx == int(I) ? (r.emplace(call_handler<Tuple, I>(hs, m)), true) : false) || ...);
    return std::move(*r);
  }
}

template <class... Rs>
struct common_result {
  using type = std::common_type_t<Rs...>;
};
template <>
struct common_result<> {
  using type = void;
};

template <class Tuple, class Seq, bool HasAfter>
struct receive_result;
template <class Tuple, std::size_t... I>
struct receive_result<Tuple, std::index_sequence<I...>, false> {
  using type = typename common_result<handler_result_t<std::tuple_element_t<I, Tuple>>...>::type;
};
template <class Tuple, std::size_t... I>
struct receive_result<Tuple, std::index_sequence<I...>, true> {
  using after_t = std::tuple_element_t<sizeof...(I), Tuple>;
  using type = typename common_result<handler_result_t<std::tuple_element_t<I, Tuple>>...,
                                      std::invoke_result_t<decltype(std::declval<after_t&>().fn)&>>::type;
};

template <class Tuple, std::size_t... I>
constexpr bool all_concrete(std::index_sequence<I...>) {
  return (handler_traits<std::tuple_element_t<I, Tuple>>::concrete && ...);
}
template <class Tuple, std::size_t... I>
constexpr bool none_takes_c_string(std::index_sequence<I...>) {
  return (!is_c_string<handler_arg_t<std::tuple_element_t<I, Tuple>>> && ...);
}

template <bool FromMark, class... Hs>
auto receive_impl(Hs&&... hs) {
  constexpr std::size_t n = sizeof...(Hs);
  using Tuple = std::tuple<Hs&...>;
  constexpr bool has_after = n > 0 && is_after<std::decay_t<std::tuple_element_t<n - 1, Tuple>>>::value;
  constexpr std::size_t nh = has_after ? n - 1 : n;
  using Seq = std::make_index_sequence<nh>;
  static_assert(all_concrete<std::tuple<std::decay_t<Hs>...>>(Seq{}),
                "herd::receive: a handler takes one parameter of a named type (const T&, T&& or T): that type is "
                "which messages it takes, and a generic lambda ([](auto x)) names none. To take every message, "
                "write [](const herd::any_message& m) and ask m.get<T>(); after(timeout, fn) goes last");
  static_assert(none_takes_c_string<std::tuple<std::decay_t<Hs>...>>(Seq{}),
                "herd::receive: a C string (send(p, \"hello\")) arrives as std::string: take const std::string&");
  using R = typename receive_result<std::tuple<std::decay_t<Hs>...>, Seq, has_after>::type;
  Tuple all(hs...);
  uint64_t deadline = UINT64_MAX;
  if constexpr (has_after) deadline = receive_deadline(std::get<n - 1>(all).timeout);
  int idx = -1;
  struct ctx_t {
    Tuple* all;
    int* idx;
  } ctx{&all, &idx};
  matcher mt{[](void* c, message* m) {
               auto* x = static_cast<ctx_t*>(c);
               *x->idx = match_index(*x->all, m, Seq{});
               return *x->idx >= 0;
             },
             &ctx};
  message* m = receive_scan(mt, deadline, FromMark);
  if (!m) {
    if constexpr (has_after) {
      return static_cast<R>(std::get<n - 1>(all).fn());
    } else if constexpr (std::is_void_v<R>) {
      return;
    } else {
      return R{};
    }
  }
  message_owner owner{m};
  return dispatch<R>(all, idx, m, Seq{});
}

}  // namespace detail

template <class... Hs>
auto receive(Hs&&... hs) {
  return detail::receive_impl<false>(std::forward<Hs>(hs)...);
}

// From a process. Marks the current end of the mailbox.
inline receive_mark mark_mailbox() { return detail::make_mark(); }

// From a process. Like receive, but looks only at messages that arrived after
// `mark` (the process's latest mark).
template <class... Hs>
auto receive_after(receive_mark, Hs&&... hs) {
  return detail::receive_impl<true>(std::forward<Hs>(hs)...);
}

}  // namespace herd
