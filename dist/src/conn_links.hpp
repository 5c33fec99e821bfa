// Links and monitors between local processes and the processes of one peer
// node: the requests local processes send to the connection process, and
// the table that process keeps so that the connection's end becomes
// noconnection on every link and monitor across it (as BEAM does).
#pragma once
#include <herd/actors/detail/remote.hpp>

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "wire.hpp"

namespace herd::detail {
struct atom_budget;
}

namespace herd::dist::detail {

// A signal from a local process to a remote one (or a monitor of a name
// there), in the connection process's mailbox. A link or monitor that no
// connection took (the node cannot be reached, the connection ended first)
// is answered with noconnection when the request is destroyed — wherever
// that happens, so no path can lose the answer.
struct link_request {
  herd::detail::remote_signal sig;
  herd::pid to;      // the remote pid; a monitor by name: the node's handle
  std::string name;  // a monitor by name
  bool armed = false;

  link_request(herd::detail::remote_signal s, herd::pid t, std::string n);
  link_request(link_request&& o) noexcept
      : sig(std::move(o.sig)), to(o.to), name(std::move(o.name)), armed(std::exchange(o.armed, false)) {}
  link_request& operator=(link_request&&) = delete;
  ~link_request();
};

// Owned by the connection process (owner only, no lock).
class link_table {
 public:
  explicit link_table(const self_id& me) : me_(me) {}
  link_table(const link_table&) = delete;
  // The connection is over: every link becomes an exit signal and every
  // monitor a down, with reason noconnection, to the local side.
  ~link_table();

  // A local process's request: updates the table, appends the frame to out.
  void local(link_request& r, std::string& out);
  // A frame from the peer (LINK, UNLINK*, EXIT*, MONITOR_P_EXIT*). False
  // when it does not decode.
  // `atoms`: the connection's share of new atoms (the reason's decode takes from it);
  // `origin`: the peer's node number, whose cap the pids decoded count against.
  bool remote(std::string_view body, std::string& out, herd::detail::atom_budget* atoms = nullptr, uint32_t origin = 0);
  // The peer announced DFLAG_UNLINK_ID (OTP 23+; OTP 26 requires it): an
  // unlink goes as UNLINK_ID with a fresh id, which the peer acknowledges.
  void set_unlink_id(bool on) noexcept { unlink_id_ = on; }
  // The peer announced DFLAG_EXIT_PAYLOAD (OTP 22+): exits go in the
  // payload forms (PAYLOAD_EXIT, PAYLOAD_EXIT2).
  void set_exit_payload(bool on) noexcept { exit_payload_ = on; }
  bool exit_payload() const noexcept { return exit_payload_; }

 private:
  struct mon {
    herd::pid local, remote;  // remote: no_pid for a monitor by name
    std::string name;
  };
  const self_id& me_;
  std::set<std::pair<herd::pid, herd::pid>> links_;  // (local, remote)
  std::map<uint64_t, mon> mons_;                      // by the local monitor_ref's id
  bool unlink_id_ = false;
  bool exit_payload_ = false;
  uint64_t next_unlink_id_ = 1;
};

// The signal hooks (detail/remote.hpp) the distribution installs.
void install_signal_hooks();

}  // namespace herd::dist::detail
