// churn_server: examples/echo_server's echo (one process per connection,
// {active, once}, hibernate after a second idle), plus two requests that
// connbench's churn mode sends as a connection's first bytes:
//
//   "herd-ghost\n"  answered "ghost\n"; when the client has closed, the
//                   socket is closed too but the process stays: a child of
//                   the listener's conns_sup, linked to it, counted in its
//                   connections, hibernated. It ends on listener_draining
//                   (or the tree's shutdown). This is how a listener comes
//                   to hold 100,000 connection processes on a machine whose
//                   per-process descriptor limit is 20,000: everything herd
//                   keeps per connection is there except the socket itself
//                   (see tools/connbench/README.md, "Churn").
//   "herd-count\n"  answered "count N\n", N = the listener's connections
//                   (this one included); then an echo connection.
//
// Options and signals as echo_server (examples/server_main.hpp).
#include "../../examples/server_main.hpp"

#include <herd/actors.hpp>
#include <herd/net/tcp.hpp>

#include <string>
#include <string_view>

namespace {

namespace net = herd::net;
using namespace std::chrono_literals;

constexpr std::string_view kGhost = "herd-ghost\n";
constexpr std::string_view kCount = "herd-count\n";
constexpr const char* kName = "churn_server";

std::chrono::milliseconds g_idle{1000};

bool echo_back(net::tcp_socket& s, std::string_view bytes) {
  return s.send(bytes) && s.set_active(net::active::once());
}

void serve(net::tcp_socket s) {
  while (herd::receive([&](net::tcp_data& d) { return echo_back(s, d.data.view()); },
                       [](const net::listener_draining&) { return false; },
                       [](const net::tcp_closed&) { return false; },
                       [](const net::tcp_error&) { return false; },
                       herd::after(g_idle, [&]() -> bool {
                         herd::hibernate([s = std::move(s)]() mutable { serve(std::move(s)); });
                       }))) {
  }
}

// The socket is gone; the process stays until the listener drains.
void ghost(net::tcp_socket s) {
  if (!s.send("ghost\n") || !s.set_active(net::active::once())) return;
  // The client closes first (its TIME_WAIT, not ours); 10 s is a bound, not a wait.
  herd::receive([](const net::tcp_closed&) {}, [](const net::tcp_error&) {}, [](const net::tcp_data&) {},
                herd::after(10s, [] {}));
  s.close();
  herd::hibernate([] { herd::receive([](const net::listener_draining&) {}); });
}

void first_bytes(net::tcp_socket s) {
  if (!s.set_active(net::active::once())) return;
  std::string got;
  // A command may come in pieces; any byte that makes it no command's prefix
  // makes this an echo connection, and what came so far is echoed.
  for (;;) {
    bool more = herd::receive([&](net::tcp_data& d) { got.append(d.data.view()); return true; },
                              [](const net::listener_draining&) { return false; },
                              [](const net::tcp_closed&) { return false; },
                              [](const net::tcp_error&) { return false; });
    if (!more) return;
    if (got == kGhost) return ghost(std::move(s));
    if (got == kCount) {
      auto i = net::info(kName);
      std::string reply = "count " + std::to_string(i ? i->connections : 0) + "\n";
      if (!echo_back(s, reply)) return;
      return serve(std::move(s));
    }
    if (kGhost.starts_with(got) || kCount.starts_with(got)) {
      if (!s.set_active(net::active::once())) return;
      continue;
    }
    if (!echo_back(s, got)) return;
    return serve(std::move(s));
  }
}

}  // namespace

int main(int argc, char** argv) {
  example::server_options o = example::parse_server_options(kName, argc, argv, {"--first-data-timeout-ms"});
  g_idle = o.idle_hibernate;
  return example::server_main(kName, o, first_bytes);
}
