// acceptbench: do the acceptors keep pace with a connect burst while every
// worker is saturated by busy processes? Prints one RESULT line per round:
// how long the burst of connects took, how long the OS kept the workers
// waiting for a CPU meanwhile, and how many SYNs the listening socket dropped
// (listen_drops: a dropped SYN is retransmitted after about a second, so a
// drop shows as a slow burst, not a lost connection). A figure, not a test:
// tests/unit/net/listener_load_test.cpp checks that every connect of such a
// burst is accepted; how fast depends on the machine and its other load.
//
//   acceptbench [--conns N] [--busy N] [--workers N] [--backlog N] [--rounds N]
#include <herd/actors.hpp>
#include <herd/net.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

struct config {
  unsigned conns = 2000, busy = 8, workers = 2, backlog = 512, rounds = 3;
};

int usage(const char* why) {
  std::fprintf(stderr, "acceptbench: %s\nusage: acceptbench [--conns N] [--busy N] [--workers N] [--backlog N] [--rounds N]\n",
               why);
  return 2;
}

// Nanoseconds the runtime's worker threads (herd-w<N>) spent runnable but
// waiting for a CPU (schedstat's second field).
uint64_t workers_run_delay_ns() {
  uint64_t sum = 0;
  for (const auto& t : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(t.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name.rfind("herd-w", 0) != 0) continue;
    std::ifstream st(t.path() / "schedstat");
    uint64_t on_cpu = 0, waiting = 0;
    if (st >> on_cpu >> waiting) sum += waiting;
  }
  return sum;
}

int connect_loopback(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
  if (fd >= 0) ::close(fd);
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  config c;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    unsigned* v = a == "--conns" ? &c.conns : a == "--busy" ? &c.busy : a == "--workers" ? &c.workers
                : a == "--backlog" ? &c.backlog : a == "--rounds" ? &c.rounds : nullptr;
    if (!v) return usage(("unknown option '" + a + "'").c_str());
    if (i + 1 == argc) return usage(("missing value after " + a).c_str());
    char* end = nullptr;
    unsigned long n = std::strtoul(argv[++i], &end, 10);
    if (*end != '\0' || n == 0 || n > 100000) return usage(("bad value for " + a).c_str());
    *v = static_cast<unsigned>(n);
  }
  int failed = 0;
  herd::node n({.workers = c.workers, .quiet = true});
  herd::exit_reason r = n.run([&] {
    std::atomic<bool> stop{false};
    for (unsigned i = 0; i < c.busy; ++i)
      herd::spawn([&] {
        while (!stop.load(std::memory_order_relaxed)) {
          for (int k = 0; k < 2000; ++k) asm volatile("" ::: "memory");  // not optimised away
          herd::yield();
        }
      });
    auto l = herd::net::start_listener(
        "acceptbench", {.bind = "127.0.0.1", .max_connections = std::size_t{c.conns} + 10, .backlog = static_cast<int>(c.backlog)},
        [](herd::net::tcp_socket s) { (void)s.recv(0, std::chrono::seconds(30)); });
    if (!l) {
      std::fprintf(stderr, "acceptbench: cannot start the listener: %s\n", l.error().message().c_str());
      failed = 1;
      stop = true;
      return;
    }
    for (unsigned round = 1; round <= c.rounds; ++round) {
      uint64_t accepts0 = herd::net::info("acceptbench")->accepts;
      uint64_t drops0 = herd::net::info("acceptbench")->listen_drops;
      uint64_t delay0 = workers_run_delay_ns();
      std::vector<int> fds;
      double burst_ms = 0;
      // The burst comes from a thread: a blocking connect must not hold a worker.
      std::thread burst([&] {
        auto t0 = std::chrono::steady_clock::now();
        for (unsigned k = 0; k < c.conns; ++k) fds.push_back(connect_loopback(l->port));
        burst_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      });
      burst.join();
      double wait_ms = double(workers_run_delay_ns() - delay0) / 1e6;
      unsigned connected = 0;
      for (int fd : fds) connected += fd >= 0;
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (herd::net::info("acceptbench")->accepts - accepts0 < connected && std::chrono::steady_clock::now() < deadline)
        herd::sleep(std::chrono::milliseconds(1));
      auto after = *herd::net::info("acceptbench");
      std::printf("RESULT impl=herd workload=accept_burst round=%u workers=%u busy=%u backlog=%u conns=%u "
                  "connected=%u accepted=%llu burst_ms=%.1f workers_cpu_wait_ms=%.1f listen_drops=%llu\n",
                  round, c.workers, c.busy, c.backlog, c.conns, connected,
                  (unsigned long long)(after.accepts - accepts0), burst_ms, wait_ms,
                  (unsigned long long)(after.listen_drops - drops0));
      std::fflush(stdout);
      if (connected != c.conns || after.accepts - accepts0 != connected) failed = 1;
      for (int fd : fds)
        if (fd >= 0) ::close(fd);
      // The handlers see EOF and end before the next round.
      deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (herd::net::info("acceptbench")->connections > 0 && std::chrono::steady_clock::now() < deadline)
        herd::sleep(std::chrono::milliseconds(1));
    }
    stop = true;
    (void)herd::net::stop_listener("acceptbench");
  });
  if (!r.is_normal()) {
    std::fprintf(stderr, "acceptbench: the root process failed: %s\n", r.to_string().c_str());
    return 1;
  }
  return failed;
}
