// A team's own server built from the installed package (find_package(herd),
// herd::net and herd::observer): an echo listener on 127.0.0.1 that offers
// the observer socket and its Prometheus endpoint, as examples/server_main.cpp
// does for --observer PATH and --metrics 127.0.0.1:PORT.
//
//   team_server SOCKET_PATH
// Prints "ready <echo port> <metrics port>" once both are up, serves until
// its standard input closes, then stops the observer before the node.
#include <herd/actors.hpp>
#include <herd/net.hpp>
#include <herd/observer/observer.hpp>

#include <unistd.h>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s SOCKET_PATH\n", argv[0]);
    return 2;
  }
  const std::string socket = argv[1];
  std::string failure;
  herd::node n({.workers = 2, .quiet = true});
  herd::exit_reason r = n.run([&] {
    auto echo = herd::net::start_listener("echo", {.bind = "127.0.0.1", .port = 0},
                                          [](herd::net::tcp_socket s) {
                                            while (auto b = s.recv())
                                              if (!s.send(b->view())) break;
                                          });
    if (!echo) {
      failure = "start_listener: " + echo.error().message();
      return;
    }
    // From the blocking pool: the observer's start and stop must not run on a worker.
    auto obs = herd::blocking([&] {
      return herd::observer::start({.path = socket, .metrics_addr = "127.0.0.1:0"});
    });
    if (!obs) {
      failure = "observer: " + obs.error;
      return;
    }
    std::printf("ready %u %u\n", unsigned{echo->port}, unsigned{obs.observer->metrics_port()});
    std::fflush(stdout);
    herd::blocking([] {
      char buf[256];
      while (::read(0, buf, sizeof buf) > 0) {
      }
    });
    herd::blocking([&] { obs.observer.reset(); });
    if (auto s = herd::net::stop_listener("echo"); !s) failure = "stop_listener: " + s.error().message();
  });
  if (failure.empty() && !r.is_normal()) failure = "the root process exited: " + r.to_string();
  if (!failure.empty()) {
    std::fprintf(stderr, "team_server: %s\n", failure.c_str());
    return 1;
  }
  return 0;
}
