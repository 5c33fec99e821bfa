// herd::result<T, E>: what a call that can fail in normal operation returns
// — a value or an error, as OTP's {ok, Value} / {error, Reason}. One template
// for every layer; each layer brings only its error type E (a struct with an
// enum `code` and `std::string message() const`) and an alias:
//
//   herd::net::result<T>         = herd::result<T, herd::net::error>
//   herd::supervisor::result<T>  = herd::result<T, herd::supervisor::error>
//   herd::modules::result<T>     = herd::result<T, herd::modules::error>
//   herd::result<T, herd::error> (stop_server)
//
//   if (auto l = herd::net::start_listener("echo", {.port = 7000}, serve)) use(l->port);
//   else log(l.error().message());      // "in_use: bind 0.0.0.0:7000: Address in use"
//
// Which failures are values and which are exceptions: "Failures: values or
// exceptions" in the README. Reading the value of an error is a bug in the
// caller, so value(), * and -> throw std::logic_error with the error's
// message. A result is used by the process that got it (no locking).
#pragma once
#include <herd/actors/ok.hpp>

#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace herd {

namespace detail {
// The enum of an error type: the type of its `code` member.
template <class E>
using errc_of = std::remove_cvref_t<decltype(std::declval<const E&>().code)>;
// "code: detail" ("code" alone without one): the message most errors give.
inline std::string code_and_detail(const char* code, const std::string& detail) {
  std::string m = code;
  if (!detail.empty()) {
    m += ": ";
    m += detail;
  }
  return m;
}
[[noreturn]] inline void throw_value_of_error(const std::string& message) {
  throw std::logic_error("herd::result::value() on an error: " + message);
}
}  // namespace detail

template <class T, class E>
class [[nodiscard]] result {
  static_assert(!std::is_same_v<T, E>, "herd::result<T, E>: the value and the error need different types");

 public:
  using value_type = T;
  using error_type = E;
  using errc_type = detail::errc_of<E>;

  // A success with nothing to say (result<herd::ok, E>).
  result() requires std::is_same_v<T, herd::ok> : v_(std::in_place_index<0>, herd::ok{}) {}
  result(T v) : v_(std::in_place_index<0>, std::move(v)) {}
  result(E e) : v_(std::in_place_index<1>, std::move(e)) {}
  result(errc_type c) : v_(std::in_place_index<1>, E{c}) {}

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  // The value; std::logic_error (with the error's message) on an error.
  T& value() & { return std::get<0>(checked()); }
  const T& value() const& { return std::get<0>(checked()); }
  T&& value() && { return std::get<0>(std::move(checked())); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // The error and its code; only when !ok() (std::bad_variant_access else).
  const E& error() const { return std::get<1>(v_); }
  errc_type code() const { return std::get<1>(v_).code; }

 private:
  std::variant<T, E>& checked() {
    if (v_.index() != 0) detail::throw_value_of_error(std::get<1>(v_).message());
    return v_;
  }
  const std::variant<T, E>& checked() const { return const_cast<result*>(this)->checked(); }
  std::variant<T, E> v_;
};

}  // namespace herd
