// A Ranch-style listener: a listening socket, a pool of acceptor processes
// and one process per connection, under a supervision tree whose shape the
// source files name:
//
//   listener_sup (rest_for_one, registered under the listener's name)
//     ├── conns_sup        the connections: spawns each one, counts them
//     │     └── connection … against max_connections, stops them all on shutdown
//     └── acceptors_sup    (one_for_one)
//           └── acceptor × options.acceptors (priority::high)
//
//   auto l = herd::net::start_listener("echo", {.port = 7000}, [](herd::net::tcp_socket s) {
//     while (auto b = s.recv()) s.send(b->view());
//   });
//   if (!l) log(l.error().message());   // "in_use: bind 0.0.0.0:7000: Address already in use"
//
// The handler runs in the connection's own process, which owns `s`; when it
// returns (or throws, or the process is killed) the socket closes and the
// connection's slot frees. A handler may hibernate between messages
// (herd::hibernate with a continuation that captures the socket) so an idle
// connection costs little memory.
//
// Every function here marked "From a process" throws herd::not_in_process
// when called from anywhere else (they call into the tree); the ones marked
// "Any thread" may be called from any thread.
#pragma once
#include <herd/net/result.hpp>
#include <herd/net/tcp.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace herd::net {

inline constexpr std::size_t infinity_connections = SIZE_MAX;

struct listener_options {
  std::string bind = "0.0.0.0";
  uint16_t port = 0;                          // 0: pick a free one (listener_info::port tells)
  unsigned acceptors = 10;
  std::size_t max_connections = 1024;         // or infinity_connections
  // A connection process that has not started (taken ownership of its
  // socket) this long after the accept is closed and counted as a refusal.
  std::chrono::milliseconds handshake_timeout{5000};
  int backlog = 0;                            // 0: /proc/sys/net/core/somaxconn
  bool reuseport = false;
  socket_options socket{};                    // applied to every accepted socket
  std::size_t connection_stack_size = 0;      // 0: the node's default
  // How long a stopping listener waits for each connection after telling it
  // `shutdown` before killing it.
  std::chrono::milliseconds connection_shutdown{5000};
};

// Runs in the connection's own process, which owns `sock`.
using connection_handler = std::function<void(tcp_socket sock)>;

// Sent to every connection when drain_listener starts: finish what you are
// doing and return. Handlers that ignore it are killed at the drain's timeout.
struct listener_draining {
  std::string listener;
};

struct listener_info {
  std::string name;
  std::string bind;
  uint16_t port = 0;
  std::size_t connections = 0;
  std::size_t max_connections = 0;
  uint64_t accepts = 0;
  uint64_t refusals = 0;           // closed at once: handshake timeout, spawn failure
  uint64_t emfile_backoffs = 0;    // EMFILE/ENFILE: 100 ms pauses taken
  // Packets the kernel dropped at this listening socket (SO_MEMINFO, so
  // only this listener's): SYNs refused because the backlog was full (the
  // client retries after 1 s, then 3 s...), and also segments for
  // connections already closed (a peer's late ACK or RST), which come in a
  // handful when many connections end at once.
  uint64_t listen_drops = 0;
  bool suspended = false;
  bool draining = false;           // drain_listener has begun
  unsigned acceptors = 0;
  herd::pid supervisor;            // the listener_sup
  herd::pid conns_sup;             // the parent of the connection processes
};

// One connection process, as its conns_sup knows it (the observer's tree).
// The peer is the address accept4 returned; the rest is the kernel's view of
// the socket at the time of the listing (TCP_INFO, SIOCOUTQ, SIOCINQ), read
// by conns_sup — the socket's own state word and active mode belong to the
// owner and are not read.
struct connection_row {
  herd::pid pid;
  std::string peer;         // "127.0.0.1:40000", "[::1]:40000"
  std::string tcp_state;    // "established", "close_wait", ...; "closed": the handler closed it
  uint32_t send_queue = 0;  // bytes written but not yet acknowledged by the peer
  uint32_t recv_queue = 0;  // bytes received but not yet read by the handler
};
struct connections_listing {
  std::size_t total = 0;    // connection processes alive
  std::vector<connection_row> rows;  // the first `max` of them, in no order
};
// From a process. Asks a listener's conns_sup (listener_info::conns_sup)
// for its connections: errc::timeout if it did not answer within `timeout`,
// errc::not_found if it is gone (or `conns_sup` is empty).
result<connections_listing> connections_of(herd::pid conns_sup, std::size_t max, std::chrono::milliseconds timeout);

// From a process. Binds and listens first (errors: errc::in_use for a port
// in use or a name taken, errc::bad_address, errc::bad_options), then starts
// the tree. The tree is linked to nothing and registered under `name`.
// The listener lives as long as its tree: if the tree ends on its own (its
// supervisor killed, past its restart intensity, or the node stopping its
// processes after the root ended), the socket closes and the name is
// forgotten (info() says not_found). Monitor listener_info::supervisor to
// hear of it; nothing restarts the tree.
result<listener_info> start_listener(std::string name, listener_options o, connection_handler h);
// From a process. Stops the tree: acceptors, then every connection
// (shutdown, then kill after options.connection_shutdown), and closes the
// listening socket.
result<> stop_listener(std::string_view name);
// From a process. Stops accepting, tells each connection (listener_draining),
// waits up to `timeout` for them to end, then stops the listener (killing
// the rest, and logging how many there were).
result<> drain_listener(std::string_view name, std::chrono::milliseconds timeout);
// Any thread. Acceptors stop accepting / accept again. While suspended,
// new connections wait in the kernel's backlog (up to its size).
result<> suspend_listener(std::string_view name);
result<> resume_listener(std::string_view name);
// Any thread (the observer calls it from its own). Takes effect at once:
// lowering it never closes existing connections; raising it lets the
// acceptors take what waits in the backlog.
result<> set_max_connections(std::string_view name, std::size_t n);
// Any thread.
result<listener_info> info(std::string_view name);
std::vector<listener_info> listeners();

}  // namespace herd::net
