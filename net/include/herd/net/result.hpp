// What the net API returns: herd::result (<herd/actors/result.hpp>) with the
// net layer's error, as gen_tcp's {ok, _} / {error, Reason} — no exception
// for ordinary outcomes (a closed peer, a timeout, a port in use).
#pragma once
#include <herd/actors/result.hpp>

#include <cstdint>
#include <string>

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

template <class T = herd::ok>
using result = herd::result<T, error>;

}  // namespace herd::net
