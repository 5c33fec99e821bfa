// The distribution's node-wide state: who we are, and one entry per node we
// are connected (or connecting) to. An annotated mutex guards it (clang's
// thread-safety analysis checks every access); it is never held across a
// blocking point (only map updates and sends happen under it).
#pragma once
#include <herd/actors/detail/remote_nodes.hpp>
#include <herd/dist/node.hpp>
#include <herd/net/tcp.hpp>
#include <herd/runtime/sched.hpp>
#include <herd/runtime/thread_safety.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "handshake.hpp"
#include "wire.hpp"

namespace herd::dist::detail {

// In a connection process's mailbox: a frame to write (length included).
struct out_frame {
  std::string bytes;
};
// Tells a connection process to close (stop(), or replaced by a new one).
struct close_connection {
  std::string why;
};
// To connect()'s caller.
struct connect_result {
  std::string node;
  bool ok = false;
  std::string why;
  errc code = errc::connect;  // when !ok: what went wrong, as the handshake said
};

// A connection's traffic, kept by its process (relaxed: each counter is
// read on its own, by the observer) and read under no lock; and its output
// queue's size, which senders wait on (dist_buf_busy_limit). One per
// connection process, made with it (so frames queued while it connects
// count too); senders hold it through a shared_ptr.
struct conn_counters {
  std::atomic<uint64_t> bytes_in{0}, bytes_out{0}, messages_in{0}, messages_out{0};
  std::atomic<uint64_t> queued_frames{0};
  std::atomic<int64_t> last_received_ns{0};  // steady clock
  // ms; written by the connection when it comes up, read by nodes_report
  // on any thread (relaxed: a figure, nothing is published through it).
  std::atomic<int64_t> tick_interval_ms{15000};
  // Bytes queued for the socket: frames senders put in the process's
  // mailbox (added by the sender before its send) and the process's own
  // buffer the kernel has not taken (taken off as the kernel takes it).
  std::atomic<uint64_t> queued_bytes{0};
  // Processes parked until queued_bytes is below the limit (dist.cpp,
  // wait_for_room); the connection process wakes them all once it is, and
  // when it ends (closed).
  rt::mutex mu;
  std::vector<rt::fiber*> waiters HERD_GUARDED_BY(mu);
  bool closed HERD_GUARDED_BY(mu) = false;
  std::atomic<bool> has_waiters{false};
  // The connection process: wakes every waiter (all of them re-check).
  void wake_waiters(bool and_close) noexcept;
};

struct conn_entry {
  herd::pid proc;        // the process that owns the connection
  bool up = false;       // the handshake is done
  bool initiator = false;
  uint64_t peer_flags = 0;
  std::vector<herd::pid> waiters;  // connect() callers
  std::shared_ptr<conn_counters> counters{};  // the process's, from its start
};

struct dist_state {
  rt::mutex mu;
  bool running HERD_GUARDED_BY(mu) = false;
  identity me HERD_GUARDED_BY(mu);  // immutable while running
  self_id self HERD_GUARDED_BY(mu);
  std::chrono::milliseconds ticktime HERD_GUARDED_BY(mu){60000};
  uint32_t max_atoms HERD_GUARDED_BY(mu) = 0;      // dist_options::max_atoms_per_connection
  uint32_t max_pids HERD_GUARDED_BY(mu) = 0;       // dist_options::max_remote_pids_per_connection
  std::size_t busy_limit HERD_GUARDED_BY(mu) = 0;  // dist_options::dist_buf_busy_limit
  std::chrono::microseconds busy_wait HERD_GUARDED_BY(mu){0};  // dist_options::busy_wait
  herd::pid keeper HERD_GUARDED_BY(mu);  // owns the epmd registration
  std::map<std::string, conn_entry, std::less<>> conns HERD_GUARDED_BY(mu);
  std::multimap<std::string, herd::pid, std::less<>> node_monitors HERD_GUARDED_BY(mu);
  std::vector<herd::pid> all_node_monitors HERD_GUARDED_BY(mu);  // monitor_nodes(true), once per call
  herd::pid pg_sync HERD_GUARDED_BY(mu);  // keeps pg scopes in step with other nodes (pg_scope.cpp)
};

dist_state& state();

// Under st.mu (st is state()), after a connection came up or went, or distribution
// stopped: the runtime's busy-wait floor is dist_options::busy_wait while
// distribution runs with a connection up, else 0.
void sync_busy_wait(dist_state& st) HERD_REQUIRES(st.mu);

// Any thread: the observer's `nodes` report (installed by start()).
herd::detail::remote_nodes_report nodes_report();

// From a process: the connection process for `node`, starting one (the
// initiator) when there is none. no_pid when not running or the name is bad.
herd::pid connection_for(std::string_view node);
// Under state().mu: starts the initiator for `node` and makes its entry.
conn_entry& start_initiator(std::string_view node) HERD_REQUIRES(state().mu);

// Any thread: the connection to `node` closes, its share of new atoms spent.
void close_for_atoms(const std::string& node);
// Any thread, after a mapping refused a pid of the node numbered `origin`
// (0: none) past max_remote_pids_per_connection: the first caller to see
// that node's budget spent closes its connection; the rest do nothing.
void close_if_pids_spent(uint32_t origin);
// The connection's log line for that.
std::string pids_cap_why(uint32_t cap);

// Run by a connection process once the handshake is done, until it ends.
void run_connection(net::tcp_socket& s, const peer_info& peer, const std::shared_ptr<conn_counters>& c);
// The process body that connects to `node`.
void initiate(std::string node, std::shared_ptr<conn_counters> c);
// The listener's handler: accepts a node.
void accept_node(net::tcp_socket s);

}  // namespace herd::dist::detail
