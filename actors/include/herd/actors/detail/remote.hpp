// The hook through which a send to a remote pid (pid::is_remote) leaves the
// node. actors does not depend on the distribution layer: herd::dist installs
// these when a node starts distribution and removes them when it stops.
// Without them a send to a remote pid is dropped, as a send to a dead pid.
#pragma once
#include <herd/actors/message.hpp>
#include <herd/actors/pid.hpp>

#include <string>

namespace herd::detail {

struct remote_hooks {
  // Takes ownership of m (destroys it when it cannot go). Any thread.
  bool (*deliver)(pid to, message* m) noexcept;
  // <N.id.serial>.
  std::string (*format)(pid p);
};

// Any thread. nullptr removes them. `h` must outlive its installation.
void set_remote_hooks(const remote_hooks* h) noexcept;

// What detail::deliver calls for a pid at or above remote_pid_bit.
bool deliver_remote(pid to, message* m) noexcept;

}  // namespace herd::detail
