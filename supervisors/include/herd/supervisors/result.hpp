// What the supervisor API returns: a value or an error, in OTP's spirit —
// `{ok, Pid}` / `{error, not_found}` become result<pid> — with no exception
// for ordinary outcomes. (A supervisor that is gone makes the call throw
// herd::call_error, as gen_server:call exits the caller.)
#pragma once
#include <herd/actors/pid.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace herd::supervisor {

enum class errc : uint8_t {
  not_found,           // no child with that id (or pid)
  running,             // the child is running (restart_child, delete_child)
  restarting,          // the child waits for a restart attempt
  already_present,     // start_child: the id exists, not running
  already_started,     // start_child / start_link: running (error::child is its pid)
  start_failed,        // the process could not be created (detail says why)
  bad_args,            // extra arguments that the start function does not take
  simple_one_for_one,  // not allowed on a simple_one_for_one supervisor
  invalid_spec,        // an id or start function missing, a duplicate id, ...
};

const char* to_string(errc e) noexcept;

struct error {
  errc code;
  herd::pid child = herd::no_pid;  // already_started: the running child (or holder of the name)
  std::string detail{};
};

struct ok_t {
  friend bool operator==(ok_t, ok_t) = default;
};

template <class T = ok_t>
class [[nodiscard]] result {
 public:
  result(T v) : v_(std::in_place_index<0>, std::move(v)) {}
  result(supervisor::error e) : v_(std::in_place_index<1>, std::move(e)) {}

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  // The value; throws std::logic_error on an error (a bug in the caller).
  T& value() & { return std::get<0>(check()); }
  const T& value() const& { return std::get<0>(const_cast<result*>(this)->check()); }
  T&& value() && { return std::move(std::get<0>(check())); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  const T* operator->() const { return &value(); }

  // The error; only when !ok().
  const supervisor::error& error() const { return std::get<1>(v_); }
  // The error code; only when !ok().
  supervisor::errc code() const { return std::get<1>(v_).code; }

 private:
  std::variant<T, supervisor::error>& check() {
    if (v_.index() != 0)
      throw std::logic_error(std::string("herd::supervisor::result::value() on an error: ") +
                             to_string(std::get<1>(v_).code) + " " + std::get<1>(v_).detail);
    return v_;
  }
  std::variant<T, supervisor::error> v_;
};

}  // namespace herd::supervisor
