// See server_main.hpp.
#include "server_main.hpp"

#include <herd/actors.hpp>
#include <herd/actors/links.hpp>
#include <herd/observer/observer.hpp>

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>

namespace example_msgs {
struct stop_signal {
  int signo;
};
}  // namespace example_msgs

namespace example {
namespace {

namespace net = herd::net;
using namespace std::chrono_literals;

void usage(std::FILE* to, const char* prog, const std::vector<std::string_view>& not_here) {
  auto opt = [&](std::string_view flag, const char* text) {
    return std::find(not_here.begin(), not_here.end(), flag) == not_here.end() ? text : "";
  };
  std::fprintf(to,
               "usage: %s --port P [--bind ADDR] [--workers N] [--acceptors N]\n"
               "       [--max-connections N|infinity]%s\n"
               "      %s [--observer PATH] [--metrics 127.0.0.1:PORT] [--busy-wait-us US]\n",
               prog, opt("--idle-hibernate-ms", " [--idle-hibernate-ms MS]"),
               opt("--first-data-timeout-ms", " [--first-data-timeout-ms MS]"));
}

[[noreturn]] void usage_error(const char* prog, const std::string& why, const std::vector<std::string_view>& not_here) {
  std::fprintf(stderr, "%s: %s\n", prog, why.c_str());
  usage(stderr, prog, not_here);
  std::exit(2);
}

// What try_parse_server_options turns into its error string.
struct option_error {
  std::string why;
};

template <class T>
T number(std::string_view flag, std::string_view v, T lo, T hi) {
  T x{};
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc{} || end != v.data() + v.size() || x < lo || x > hi)
    throw option_error{std::string(flag) + ": '" + std::string(v) + "' is not a number in [" + std::to_string(lo) +
                       ", " + std::to_string(hi) + "]"};
  return x;
}

// Every connection needs a file descriptor: take the hard limit, and say what
// to raise when even that is below the connections this node is configured
// for — --max-connections, or with infinity, its process table (a connection
// is a process).
void check_fd_limit(const char* prog, const server_options& o, std::size_t max_actors) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  // The listener, epoll, the observer, stdio, the logger: a few dozen.
  constexpr std::size_t reserved = 64;
  const bool infinite = o.max_connections == net::infinity_connections;
  const std::size_t conns = infinite ? max_actors : o.max_connections;
  const std::size_t want = conns + reserved;
  if (rl.rlim_cur == RLIM_INFINITY || want <= rl.rlim_cur) return;
  const auto limit = static_cast<unsigned long long>(rl.rlim_cur);
  const unsigned long long fit = limit > reserved ? limit - reserved : 0;
  const std::string asked = infinite ? "--max-connections infinity (up to " + std::to_string(conns) + " processes)"
                                     : "--max-connections " + std::to_string(conns);
  std::fprintf(stderr,
               "%s: warning: %s needs %zu file descriptors but the limit is %llu: about %llu connections fit, "
               "accepts beyond fail (EMFILE). Raise it with `ulimit -n` (its hard limit: "
               "/etc/security/limits.conf; the kernel's: fs.nr_open) or lower --max-connections\n",
               prog, asked.c_str(), want, limit, fit);
}

}  // namespace

std::optional<std::string> try_parse_server_options(int argc, char** argv, server_options& o,
                                                    const std::vector<std::string_view>& not_here) try {
  o = server_options{};
  std::vector<std::string_view> seen;  // an option given twice is refused, not silently overridden
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (std::find(not_here.begin(), not_here.end(), a) != not_here.end())
      throw option_error{"'" + std::string(a) + "' is not an option of this server"};
    if (a.starts_with("--") && std::find(seen.begin(), seen.end(), a) != seen.end())
      throw option_error{std::string(a) + " is given more than once"};
    seen.push_back(a);
    auto value = [&]() -> std::string_view {
      if (i + 1 >= argc) throw option_error{std::string(a) + " needs a value"};
      return argv[++i];
    };
    if (a == "--port") {
      o.port = number<uint16_t>(a, value(), 0, 65535);
    } else if (a == "--bind") {
      o.bind = std::string(value());
      if (o.bind.empty()) throw option_error{"--bind needs an address (0.0.0.0 for every IPv4 interface)"};
    } else if (a == "--workers") {
      o.workers = number<unsigned>(a, value(), 1, 1024);
    } else if (a == "--acceptors") {
      o.acceptors = number<unsigned>(a, value(), 1, 1024);
    } else if (a == "--max-connections") {
      std::string_view v = value();
      o.max_connections =
          v == "infinity" ? net::infinity_connections : number<std::size_t>(a, v, 1, std::size_t(1) << 40);
    } else if (a == "--observer") {
      o.observer = std::string(value());
      if (o.observer.empty()) throw option_error{"--observer needs a socket path"};
    } else if (a == "--metrics") {
      o.metrics = std::string(value());
      auto colon = o.metrics.rfind(':');
      std::string host = colon == std::string::npos ? "" : o.metrics.substr(0, colon);
      if (host != "127.0.0.1" && host != "localhost" && host != "[::1]")
        throw option_error{"--metrics: '" + o.metrics + "' is not a loopback address (127.0.0.1:PORT or [::1]:PORT)"};
      number<uint16_t>(a, std::string_view(o.metrics).substr(colon + 1), 0, 65535);
    } else if (a == "--idle-hibernate-ms") {
      o.idle_hibernate = std::chrono::milliseconds(number<long>(a, value(), 0, 86'400'000));
    } else if (a == "--busy-wait-us") {
      o.busy_wait = std::chrono::microseconds(number<long>(a, value(), 0, herd::rt::max_busy_wait.count()));
    } else if (a == "--first-data-timeout-ms") {
      o.first_data_timeout = std::chrono::milliseconds(number<long>(a, value(), 0, 86'400'000));
    } else {
      throw option_error{a == "--help" || a == "-h" ? "help" : "unknown option '" + std::string(a) + "'"};
    }
  }
  if (!o.port) throw option_error{"--port is required (0 picks a free port)"};
  if (!o.metrics.empty() && o.observer.empty()) throw option_error{"--metrics needs --observer PATH"};
  return std::nullopt;
} catch (const option_error& e) {
  return e.why;
}

server_options parse_server_options(const char* prog, int argc, char** argv,
                                    const std::vector<std::string_view>& not_here) {
  server_options o;
  for (int i = 1; i < argc; ++i) {
    // Asked for: to stdout, and not an error.
    if (std::string_view(argv[i]) == "--help" || std::string_view(argv[i]) == "-h") {
      usage(stdout, prog, not_here);
      std::exit(0);
    }
  }
  if (auto why = try_parse_server_options(argc, argv, o, not_here)) usage_error(prog, *why, not_here);
  return o;
}

int server_main(const char* prog, const server_options& o, net::connection_handler handler,
                const server_hooks& hooks) {
  // Before the first print: a closed stdout or stderr (a log reader gone)
  // makes writes fail with EPIPE, not end the server (the node's runtime does
  // the same when it starts).
  signal(SIGPIPE, SIG_IGN);
  herd::node_options no;
  if (o.workers) no.workers = o.workers;
  no.busy_wait = o.busy_wait;
  check_fd_limit(prog, o, no.max_actors);
  // Signals go to one waiting thread: blocked everywhere else, workers included
  // (they inherit this mask).
  sigset_t stop_set;
  sigemptyset(&stop_set);
  sigaddset(&stop_set, SIGINT);
  sigaddset(&stop_set, SIGTERM);
  sigaddset(&stop_set, SIGHUP);  // on_hangup, or ignored (said on stderr)
  pthread_sigmask(SIG_BLOCK, &stop_set, nullptr);

  herd::node node(no);
  int code = 0;
  herd::exit_reason why = node.run([&] {
    if (hooks.before_listen && !hooks.before_listen()) {
      code = 1;
      return;
    }
    net::listener_options lo{.bind = o.bind, .port = *o.port, .acceptors = o.acceptors,
                             .max_connections = o.max_connections};
    auto l = net::start_listener(prog, lo, std::move(handler));
    if (!l) {
      std::fprintf(stderr, "%s: cannot listen on %s:%u: %s\n", prog, o.bind.c_str(), unsigned(*o.port),
                   l.error().message().c_str());
      code = 1;
      return;
    }
    // The observer starts once the node and its listener are up, from a
    // plain thread (start() refuses a worker), and is stopped before the
    // root returns, so before the node stops.
    std::unique_ptr<herd::observer::handle> obs;
    if (!o.observer.empty()) {
      auto r = herd::blocking([&] { return herd::observer::start({.path = o.observer, .metrics_addr = o.metrics}); });
      if (!r) {
        std::fprintf(stderr, "%s: observer: %s\n", prog, r.error.c_str());
        code = 2;
        (void)net::stop_listener(prog);
        return;
      }
      obs = std::move(r.observer);
    }
    std::printf("listening on %s:%u\n", l->bind.c_str(), unsigned(l->port));
    // After "listening on" (scripts wait for that first line).
    if (obs) std::printf("observer on %s\n", o.observer.c_str());
    if (obs && obs->metrics_port())
      std::printf("metrics on %s:%u\n", o.metrics.substr(0, o.metrics.rfind(':')).c_str(),
                  unsigned(obs->metrics_port()));
    std::fflush(stdout);

    herd::pid root = herd::self();
    // Detached: it only ever waits in sigwait, and ends with the process.
    std::thread([root, stop_set] {
      // Started from a worker, it would inherit that worker's name (herd-wN):
      // tools that find workers by name would count it as one.
      pthread_setname_np(pthread_self(), "herd-signals");
      for (;;) {
        int signo = 0;
        sigwait(&stop_set, &signo);
        herd::send(root, example_msgs::stop_signal{signo});
        if (signo != SIGHUP) return;
      }
    }).detach();
    // The listener's tree is the application's: if it ends (killed, or past
    // its restart intensity) the server cannot serve, and exits non-zero —
    // as a BEAM node whose application's top supervisor dies.
    const herd::monitor_ref tree = herd::monitor(l->supervisor);
    std::optional<herd::exit_reason> lost;
    int signo = 0;
    for (;;) {
      herd::receive([&](example_msgs::stop_signal s) { signo = s.signo; },
                    herd::when([&](const herd::down& d) { return d.ref == tree; },
                               [&](herd::down& d) { lost = std::move(d.reason); }));
      if (lost || signo != SIGHUP) break;
      if (hooks.on_hangup) hooks.on_hangup();
      else std::fprintf(stderr, "%s: SIGHUP ignored (nothing to reload; SIGINT or SIGTERM drains)\n", prog);
    }
    if (lost) {
      std::fprintf(stderr, "%s: the listener's supervision tree ended (%s): the port is closed, exiting with status 1\n",
                   prog, lost->to_string().c_str());
      code = 1;
      if (obs) herd::blocking([&] { obs.reset(); });
      return;
    }
    herd::demonitor(tree);
    auto before = net::info(prog);
    std::fprintf(stderr, "%s: %s, draining %zu connection(s)\n", prog, strsignal(signo),
                 before ? before->connections : std::size_t(0));
    // drain_listener returns early only when every connection has ended;
    // at the timeout it stops the rest and logs how many.
    constexpr auto drain_timeout = 5s;
    const auto t0 = std::chrono::steady_clock::now();
    if (auto d = net::drain_listener(prog, drain_timeout); !d)
      std::fprintf(stderr, "%s: drain: %s\n", prog, d.error().message().c_str());
    else if (auto took = std::chrono::steady_clock::now() - t0; took < drain_timeout)
      std::fprintf(stderr, "%s: drained: every connection ended within %lld ms\n", prog,
                   static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
    if (obs) herd::blocking([&] { obs.reset(); });
  });
  if (!why.is_normal()) {
    std::fprintf(stderr, "%s: the node ended: %s\n", prog, why.to_string().c_str());
    return 1;
  }
  return code;
}

}  // namespace example
