// What the observer's `nodes` view reads: the distribution layer's
// connections and their traffic. actors does not depend on herd::dist (nor
// the observer on it): herd::dist installs the source when it starts.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace herd::detail {

struct remote_node_stats {
  std::string node;
  bool up = false;                       // the handshake is done
  uint64_t bytes_in = 0, bytes_out = 0;  // on the socket, ticks and headers included
  uint64_t messages_in = 0;              // frames received, ticks not counted
  uint64_t messages_out = 0;             // frames local senders queued
  uint64_t queued_bytes = 0;             // taken from senders, not yet taken by the kernel
  uint64_t queued_frames = 0;            // messages waiting in the connection's mailbox
  int64_t last_received_ms = -1;         // since anything (a tick too) arrived; -1: not up
  uint64_t ticks_missed = 0;             // whole tick intervals (net_ticktime / 4) since then
};

struct remote_nodes_report {
  std::string this_node;  // "" when distribution does not run
  std::vector<remote_node_stats> nodes;
};

using remote_nodes_source = remote_nodes_report (*)();

// Any thread; nullptr removes it.
void set_remote_nodes_source(remote_nodes_source f) noexcept;
// Any thread: the installed source's report, or an empty one.
remote_nodes_report remote_nodes();

}  // namespace herd::detail
