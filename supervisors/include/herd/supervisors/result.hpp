// What the supervisor API returns: herd::result (<herd/actors/result.hpp>)
// with the supervisor's error — OTP's {ok, Pid} / {error, not_found} become
// result<pid>, with no exception for ordinary outcomes. (A supervisor that
// is gone makes the call throw herd::call_error, as gen_server:call exits
// the caller; see "Failures: values or exceptions" in the README.)
#pragma once
#include <herd/actors/pid.hpp>
#include <herd/actors/result.hpp>

#include <cstdint>
#include <string>

namespace herd::supervisor {

enum class errc : uint8_t {
  not_found,           // no child with that id (or pid); children_of: no such supervisor
  running,             // the child is running (restart_child, delete_child)
  restarting,          // the child waits for a restart attempt
  already_present,     // start_child: the id exists, not running
  already_started,     // start_child / start_link: running (error::child is its pid)
  start_failed,        // the process could not be created (detail says why)
  bad_args,            // extra arguments that the start function does not take
  simple_one_for_one,  // not allowed on a simple_one_for_one supervisor
  invalid_spec,        // an id or start function missing, a duplicate id, ...
  timeout,             // stop: the supervisor is still alive after the timeout
};

// Any thread.
const char* to_string(errc e) noexcept;

struct error {
  errc code;
  herd::pid child = herd::no_pid;  // already_started: the running child (or holder of the name)
  std::string detail{};
  // "already_started <0.7.0>: child b", "timeout: ...".
  std::string message() const;
};

template <class T = herd::ok>
using result = herd::result<T, error>;

}  // namespace herd::supervisor
