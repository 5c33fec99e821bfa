// push_gateway: herd's implementation of push gateway protocol v1
// (/work/shared/push-gateway-protocol.md, summarised in docs/push-gateway.md):
// HTTP/1.1 and WebSocket on one port, pushes to users (every device) and
// rooms, /stats, drain on SIGTERM/SIGINT with 1001.
//
//   push_gateway --port P [--bind ADDR] [--workers N] [--ping-interval-ms MS]
//                [--max-message-bytes N] [--max-connections N|infinity]
//                [--observer PATH] [--metrics 127.0.0.1:PORT]
//                [--acceptors N] [--idle-hibernate-ms MS] [--busy-wait-us US]
//
// The command line, "listening on ADDR:PORT", the observer and the drain
// are examples/server_main's. --max-connections limits WebSocket
// connections (an upgrade past it: 503); the listener takes 1,024 TCP
// connections more than that for HTTP.
#include "../server_main.hpp"
#include "gateway.hpp"

#include <herd/http/server.hpp>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr const char* prog = "push_gateway";

void usage(std::FILE* to) {
  std::fprintf(to,
               "usage: %s --port P [--bind ADDR] [--workers N] [--ping-interval-ms MS]\n"
               "       [--max-message-bytes N] [--max-connections N|infinity]\n"
               "       [--observer PATH] [--metrics 127.0.0.1:PORT] [--acceptors N] [--idle-hibernate-ms MS]\n"
               "       [--busy-wait-us US]\n",
               prog);
}

[[noreturn]] void bad_option(const std::string& why) {
  std::fprintf(stderr, "%s: %s\n", prog, why.c_str());
  usage(stderr);
  std::exit(2);
}

unsigned long long number(std::string_view flag, const char* v, unsigned long long lo, unsigned long long hi) {
  std::string_view s(v);
  unsigned long long x = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
  if (ec != std::errc{} || end != s.data() + s.size() || x < lo || x > hi)
    bad_option(std::string(flag) + ": '" + std::string(s) + "' is not a number in [" + std::to_string(lo) + ", " +
               std::to_string(hi) + "]");
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    }
  }
  // The gateway's own options are taken out here; the rest is the example
  // servers' common command line.
  static push_gateway::state st;
  bool ping_seen = false, max_seen = false;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    bool ping = a == "--ping-interval-ms", max = a == "--max-message-bytes";
    if (!ping && !max) {
      rest.push_back(argv[i]);
      continue;
    }
    bool& seen = ping ? ping_seen : max_seen;
    if (seen) bad_option(std::string(a) + " is given more than once");
    seen = true;
    if (i + 1 >= argc) bad_option(std::string(a) + " needs a value");
    const char* v = argv[++i];
    if (ping) st.cfg.ping_interval = std::chrono::milliseconds(number(a, v, 1, 86'400'000));
    // A frame's length field carries it, and the HTTP reader's body limit.
    else st.cfg.max_message_bytes = number(a, v, 1, std::size_t(1) << 30);
  }
  example::server_options o;
  if (auto err = example::try_parse_server_options(static_cast<int>(rest.size()), rest.data(), o,
                                                   {"--first-data-timeout-ms"}))
    bad_option(*err);
  // An idle connection hibernates after 100 ms here, not the examples' 1 s:
  // a push connection is idle nearly always, and while clients connect at
  // R/s about R x idle_hibernate of them are awake at once, each holding a
  // stack whose pages the pool keeps (5,000 connections at 2,000/s: 2,447
  // bytes per idle connection with 1 s, 1,688 with 100 ms).
  //
  // A WebSocket connection, though, hibernates as soon as its mailbox is
  // empty (0 ms) unless --idle-hibernate-ms is given: a user gets a push
  // every few seconds at most, so a connection kept awake for 100 ms after
  // each push only waits for its idle timer — a second wake-up per push
  // (timer, switch, then hibernate) that cost about a quarter of the
  // gateway's user-space CPU per push (docs/push-gateway.md), and more
  // stacks awake at once.
  bool hibernate_given = false;
  for (char* a : rest) hibernate_given |= std::string_view(a) == "--idle-hibernate-ms";
  if (!hibernate_given) o.idle_hibernate = std::chrono::milliseconds(100);
  st.cfg.max_websockets = o.max_connections;
  st.cfg.idle_hibernate = hibernate_given ? o.idle_hibernate : std::chrono::milliseconds(0);
  // The limit is the gateway's, counted on upgrades, so that the 503 can be
  // answered: the listener takes up to http_headroom more TCP connections
  // (pushers, /stats, refused upgrades) before new ones wait in the backlog.
  constexpr std::size_t http_headroom = 1024;
  if (o.max_connections != herd::net::infinity_connections) o.max_connections += http_headroom;
  herd::http::server_options ho;
  ho.limit.max_body = st.cfg.max_message_bytes;
  ho.idle_hibernate = o.idle_hibernate;
  // The routes only capture &st: built here, the table made in the root
  // process before the listener starts.
  example::server_hooks hooks{.before_listen = [] { return push_gateway::start(st); }};
  return example::server_main(prog, o, herd::http::serve(push_gateway::make_router(st), ho), hooks);
}
