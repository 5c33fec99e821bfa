// What the net API returns: a value or an error, as gen_tcp's {ok, _} /
// {error, Reason} — no exception for ordinary outcomes (a closed peer, a
// timeout, a port in use). Same shape as herd::supervisor::result.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace herd::net {

enum class errc : uint8_t {
  closed,        // the peer closed (recv at EOF), or the socket was closed
  timeout,       // recv/send/connect did not complete in time
  reset,         // the peer reset the connection (ECONNRESET, EPIPE)
  not_owner,     // called from a process that does not own the socket
  would_exceed,  // a limit would be exceeded (max_connections)
  bad_address,   // a host or bind address that does not parse or resolve
  system,        // another errno (error::sys)
  in_use,        // start_listener: the port is taken (EADDRINUSE), or the name is
  not_found,     // no listener by that name
  refused,       // connect: ECONNREFUSED
  bad_options,   // an option out of range
  not_connected, // an empty handle
};

// Any thread.
const char* to_string(errc e) noexcept;

struct error {
  errc code;
  int sys = 0;             // the errno behind it, when there is one
  std::string detail{};    // what was being done ("bind 0.0.0.0:80")
  // "closed", "system: connect 10.0.0.1:80: Network is unreachable", ...
  std::string message() const;
};

struct ok_t {
  friend bool operator==(ok_t, ok_t) = default;
};

template <class T = ok_t>
class [[nodiscard]] result {
 public:
  result() requires std::is_same_v<T, ok_t> : v_(std::in_place_index<0>, ok_t{}) {}
  result(T v) : v_(std::in_place_index<0>, std::move(v)) {}
  result(net::error e) : v_(std::in_place_index<1>, std::move(e)) {}
  result(errc c) : v_(std::in_place_index<1>, net::error{c}) {}

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  // The value; throws std::logic_error on an error (a bug in the caller).
  T& value() & { return std::get<0>(check()); }
  const T& value() const& { return std::get<0>(const_cast<result*>(this)->check()); }
  T&& value() && { return std::move(std::get<0>(check())); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(value()); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // The error; only when !ok().
  const net::error& error() const { return std::get<1>(v_); }
  errc code() const { return std::get<1>(v_).code; }

 private:
  std::variant<T, net::error>& check() {
    if (v_.index() != 0)
      throw std::logic_error("herd::net::result::value() on an error: " + std::get<1>(v_).message());
    return v_;
  }
  std::variant<T, net::error> v_;
};

}  // namespace herd::net
