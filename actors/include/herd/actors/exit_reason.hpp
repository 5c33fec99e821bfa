// Why a process ended, as Erlang says it: normal, shutdown, kill (the signal)
// and killed (what a killed process reports), noproc (no such process), or an
// error carrying the exception's demangled type name and what() — as strings,
// never an exception_ptr, which may point into a module that gets unloaded.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>

namespace herd {

// noconnection: the process was on another node, and the connection to it
// went down (or could not be made).
enum class exit_kind : uint8_t { normal, shutdown, kill, killed, error, noproc, noconnection };

class exit_reason {
 public:
  exit_reason() = default;  // normal
  static exit_reason normal() { return {}; }
  static exit_reason shutdown(std::string detail = {}) { return {exit_kind::shutdown, {}, std::move(detail)}; }
  static exit_reason kill() { return {exit_kind::kill, {}, {}}; }
  static exit_reason killed() { return {exit_kind::killed, {}, {}}; }
  static exit_reason noproc() { return {exit_kind::noproc, {}, {}}; }
  static exit_reason noconnection() { return {exit_kind::noconnection, {}, {}}; }
  static exit_reason error(std::string type, std::string what) {
    return {exit_kind::error, std::move(type), std::move(what)};
  }

  exit_kind kind() const noexcept { return kind_; }
  bool is_normal() const noexcept { return kind_ == exit_kind::normal; }
  const std::string& type() const noexcept { return type_; }    // error: the exception's type
  const std::string& what() const noexcept { return what_; }    // error: what(); shutdown: detail
  std::string to_string() const;

  friend bool operator==(const exit_reason&, const exit_reason&) = default;
  friend std::ostream& operator<<(std::ostream& os, const exit_reason& r) { return os << r.to_string(); }

 private:
  exit_reason(exit_kind k, std::string t, std::string w) : kind_(k), type_(std::move(t)), what_(std::move(w)) {}
  exit_kind kind_ = exit_kind::normal;
  std::string type_;
  std::string what_;
};

}  // namespace herd
