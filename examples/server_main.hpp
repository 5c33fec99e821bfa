// What echo_server and chat_server share: the command line, the file-
// descriptor limit, "listening on ADDR:PORT", and draining on SIGINT/SIGTERM.
//
//   int main(int argc, char** argv) { return example::server_main("echo_server", argc, argv, echo); }
//
// Options: --port P (required; 0 picks a free port) [--bind ADDR]
// [--workers N] [--acceptors N] [--max-connections N|infinity]
// [--idle-hibernate-ms MS] [--first-data-timeout-ms MS] [--observer PATH]
// [--metrics 127.0.0.1:PORT] [--busy-wait-us US].
// Bad options (an empty --bind, an option given twice): a message and exit
// 2. --help (-h): the usage on stdout, exit 0.
// SIGHUP: on_hangup if the server has one (hot_swap_server reloads), else
// ignored with a line on stderr. If the listener's supervision tree ends
// (killed, or past its restart intensity) the server says so on stderr and
// exits 1: it has no port left. A closed stdout or stderr never ends it
// (SIGPIPE is ignored: prints fail with EPIPE).
// A descriptor limit below the connections the node is configured for (with
// infinity: its process table) is warned about on stderr at start.
#pragma once
#include <herd/net/listener.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace example {

struct server_options {
  std::string bind = "0.0.0.0";
  std::optional<uint16_t> port;
  unsigned workers = 0;  // 0: one per core
  unsigned acceptors = 10;
  // The examples default to infinity; the library's default stays 1024.
  std::size_t max_connections = herd::net::infinity_connections;
  std::chrono::milliseconds idle_hibernate{1000};
  // A connection that has sent nothing this long is closed (0: never).
  std::chrono::milliseconds first_data_timeout{0};
  std::string observer;  // the observer's socket path (docs/observer-protocol.md); empty: none
  std::string metrics;   // the observer's Prometheus endpoint, loopback only; needs --observer
  // node_options::busy_wait (0..10000 us): idle workers spin before they
  // sleep. Off by default: it spends the idle gaps' CPU (docs/distribution.md).
  std::chrono::microseconds busy_wait{0};
};

// Parses argv; exits 2 with a message on a bad option, 0 after printing the
// usage for --help. `not_here`: the
// flags this server does not honour (an option taken and ignored would be a
// lie), refused like unknown ones and left out of its usage line.
server_options parse_server_options(const char* prog, int argc, char** argv,
                                    const std::vector<std::string_view>& not_here = {});
// The same without exiting: the reason a bad command line is bad, else
// nullopt and `out` filled.
std::optional<std::string> try_parse_server_options(int argc, char** argv, server_options& out,
                                                    const std::vector<std::string_view>& not_here = {});

struct server_hooks {
  // In the node's root process, before the listener starts; false: exit 1
  // (it printed why).
  std::function<bool()> before_listen;
  // In the root process, on each SIGHUP. Unset: SIGHUP is ignored (logged).
  std::function<void()> on_hangup;
};

// Starts a node and a listener named `prog` that runs `handler` per
// connection, prints "listening on ADDR:PORT", and on SIGINT/SIGTERM drains
// (5 s) and returns 0. 1 if it cannot listen, or when the listener's tree
// ends on its own.
int server_main(const char* prog, const server_options& o, herd::net::connection_handler handler,
                const server_hooks& hooks = {});

}  // namespace example
