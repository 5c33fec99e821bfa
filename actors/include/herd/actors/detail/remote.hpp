// The hook through which a send to a remote pid (pid::is_remote) leaves the
// node. actors does not depend on the distribution layer: herd::dist installs
// these when a node starts distribution and removes them when it stops.
// Without them a send to a remote pid is dropped, as a send to a dead pid.
#pragma once
#include <herd/actors/exit_reason.hpp>
#include <herd/actors/message.hpp>
#include <herd/actors/pid.hpp>

#include <string>
#include <string_view>

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

// Links, monitors and exit signals between a local process and a remote
// one. Going out, actors turns the signal a process sends to a remote pid
// (link, unlink, exit, monitor, demonitor) into one of these for the dist
// layer; coming in, the dist layer hands one to deliver_signal_from_remote.
struct remote_signal {
  enum op_t : uint8_t { link, unlink, exit, monitor, demonitor, down };
  op_t op = link;
  pid from;               // the sender: local going out, remote (or no_pid) coming in
  uint64_t ref = 0;       // monitor, demonitor, down: the monitor_ref's id
  exit_reason reason;     // exit, down
  bool via_link = false;  // exit: through a link (EXIT), or exit/2 (EXIT2)
};

struct remote_signal_hooks {
  // A signal from a local process to the remote pid `to`. Any thread. A
  // link or monitor that cannot reach the node is answered by the dist
  // layer (noconnection), so nothing is returned.
  void (*send)(pid to, remote_signal s) noexcept;
  // From a process: `from` monitors {name, node} with `ref`. False when
  // `node` is this node (the caller monitors the local name); else *handle
  // is a pid standing for the node, under which the monitor is recorded (a
  // demonitor sent to it reaches the dist layer).
  bool (*monitor_name)(pid from, uint64_t ref, std::string_view name, std::string_view node, pid* handle) noexcept;
};

// Any thread. nullptr removes them. `h` must outlive its installation.
void set_remote_signal_hooks(const remote_signal_hooks* h) noexcept;
const remote_signal_hooks* remote_signals() noexcept;

// Any thread: hands `s`, from a remote process, to the local process `to`
// as the signal it stands for (exit: via_link as given; down: to a monitor
// of `to`'s with id s.ref). False when `to` is not a live local process.
bool deliver_signal_from_remote(pid to, remote_signal s) noexcept;

}  // namespace herd::detail
