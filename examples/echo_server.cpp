// echo_server: herd's headline in a page. One actor per connection, written
// as straight-line code: arm {active, once}, take the tcp_data message, write
// it back, arm again. A connection idle for --idle-hibernate-ms (1 s)
// hibernates — gives its stack back — so idle connections cost their socket
// and control block, not a stack. With --first-data-timeout-ms, a client
// that connects and sends nothing that long is closed (the handshake timeout
// a protocol with a greeting would have).
//
//   echo_server --port P [--bind ADDR] [--workers N] [--acceptors N]
//               [--max-connections N|infinity] [--idle-hibernate-ms MS]
//               [--first-data-timeout-ms MS]
//
// Prints "listening on ADDR:PORT" once it accepts (--port 0 picks a free
// port). SIGINT or SIGTERM drains: stop accepting, give connections 5 s to
// end, close the rest, exit 0. Bad options: a message and exit 2.
#include "server_main.hpp"

#include <herd/actors.hpp>
#include <herd/net/tcp.hpp>

namespace {

namespace net = herd::net;

// Set once in main, before the node starts.
std::chrono::milliseconds g_idle{1000};
std::chrono::milliseconds g_first_data{0};  // 0: wait for a first message forever

// One message: false when the connection is over. Nothing within `wait`:
// whatever on_timeout says.
template <class F>
bool next_message(net::tcp_socket& s, std::chrono::milliseconds wait, F on_timeout) {
  return herd::receive(
      [&](net::tcp_data& d) { return s.send(d.data.view()) && s.set_active(net::active::once()); },
      [](const net::tcp_closed&) { return false; },
      [](const net::tcp_error&) { return false; }, herd::after(wait, std::move(on_timeout)));
}

// Idle too long, the process hibernates and serve() starts afresh with the
// next message.
void serve(net::tcp_socket s) {
  while (next_message(s, g_idle, [&]() -> bool {
    herd::hibernate([s = std::move(s)]() mutable { serve(std::move(s)); });
  })) {
  }
}

void echo(net::tcp_socket s) {
  if (!s.set_active(net::active::once())) return;
  if (g_first_data.count() > 0 && !next_message(s, g_first_data, [] { return false; })) return;  // closes s
  serve(std::move(s));
}

}  // namespace

int main(int argc, char** argv) {
  example::server_options o = example::parse_server_options("echo_server", argc, argv);
  g_idle = o.idle_hibernate;
  g_first_data = o.first_data_timeout;
  return example::server_main("echo_server", o, echo);
}
