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
// port). SIGINT or SIGTERM drains: stop accepting; an idle connection
// closes at once, a busy one (data in the last 100 ms) goes on echoing
// until its peer has been quiet for a second; after 5 s the rest are
// stopped; exit 0. Bad options: a message and exit 2; --help: usage, exit 0.
#include "server_main.hpp"

#include <herd/actors.hpp>
#include <herd/net/tcp.hpp>

namespace {

namespace net = herd::net;

// Set once in main, before the node starts.
std::chrono::milliseconds g_idle{1000};
std::chrono::milliseconds g_first_data{0};  // 0: wait for a first message forever

// Draining, a connection that answered data in the last drain_idle is busy:
// a request may still be arriving, a reply still being read. It is served
// until its peer has been quiet for drain_quiet, then closed (closing while
// the peer still sends would reset the connection and lose the reply). Any
// other connection closes at once.
constexpr std::chrono::milliseconds drain_idle{100};
constexpr std::chrono::milliseconds drain_quiet{1000};

using clock = std::chrono::steady_clock;

// `last`: when the reply was written (a send parked on a peer that reads
// slowly is work under way, however long it took).
bool echo_back(net::tcp_socket& s, net::tcp_data& d, clock::time_point& last) {
  const bool ok = s.send(d.data.view()) && s.set_active(net::active::once());
  last = clock::now();
  return ok;
}

// The listener is draining: finish what is under way, then close (s's
// destructor closes gracefully: what was echoed still arrives).
bool finish(net::tcp_socket& s, clock::time_point last) {
  if (clock::now() - last >= drain_idle) return false;
  while (herd::receive([&](net::tcp_data& d) { return echo_back(s, d, last); },
                       [](const net::tcp_closed&) { return false; },
                       [](const net::tcp_error&) { return false; },
                       herd::after(drain_quiet, [] { return false; }))) {
  }
  return false;
}

// One message: false when the connection is over. Nothing within `wait`:
// whatever on_timeout says. `last`: when data last came and was answered.
template <class F>
bool next_message(net::tcp_socket& s, clock::time_point& last, std::chrono::milliseconds wait, F on_timeout) {
  return herd::receive([&](net::tcp_data& d) { return echo_back(s, d, last); },
                       [&](const net::listener_draining&) { return finish(s, last); },
                       [](const net::tcp_closed&) { return false; },
                       [](const net::tcp_error&) { return false; }, herd::after(wait, std::move(on_timeout)));
}

// Idle too long, the process hibernates and serve() starts afresh with the
// next message (a draining one finds it idle).
void serve(net::tcp_socket s, clock::time_point last = {}) {
  while (next_message(s, last, g_idle, [&]() -> bool {
    herd::hibernate([s = std::move(s)]() mutable { serve(std::move(s)); });
  })) {
  }
}

void echo(net::tcp_socket s) {
  if (!s.set_active(net::active::once())) return;
  clock::time_point last{};  // never: idle
  if (g_first_data.count() > 0 && !next_message(s, last, g_first_data, [] { return false; })) return;  // closes s
  serve(std::move(s), last);
}

}  // namespace

int main(int argc, char** argv) {
  example::server_options o = example::parse_server_options("echo_server", argc, argv);
  g_idle = o.idle_hibernate;
  g_first_data = o.first_data_timeout;
  return example::server_main("echo_server", o, echo);
}
