// Acceptors keep pace on a busy node: with both workers saturated by busy
// processes, a burst of connections into a backlog of 512 is accepted in
// full and the kernel's ListenOverflows counter does not move.
#include "net_fixture.hpp"

#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

using namespace net_test;
using herd::net::tcp_socket;

namespace {

// TcpExt ListenOverflows from /proc/net/netstat (-1 when unreadable).
long long listen_overflows() {
  std::ifstream f("/proc/net/netstat");
  std::string names, values;
  while (std::getline(f, names) && std::getline(f, values)) {
    if (names.rfind("TcpExt:", 0) != 0) continue;
    std::istringstream n(names), v(values);
    std::string name, value;
    while (n >> name && v >> value)
      if (name == "ListenOverflows") return std::stoll(value);
  }
  return -1;
}

}  // namespace

TEST_CASE("with both workers saturated, a burst of connects is accepted in full without listen overflows", "[net][listener][load]") {
  const int conns = static_cast<int>(herd::test::scaled(2000, 1000));
  uint64_t accepted = 0;
  long long overflow_before = 0, overflow_after = 0;
  int connected = 0;
  double burst_ms = 0;
  herd::test::run_node(node_opts(2), [&] {
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> spins{0};
    // Four busy processes per worker: always runnable, never idle.
    for (int i = 0; i < 8; ++i)
      herd::spawn([&] {
        while (!stop.load(std::memory_order_relaxed)) {
          for (int k = 0; k < 2000; ++k) asm volatile("" ::: "memory");  // not optimised away
          spins.fetch_add(1, std::memory_order_relaxed);
          herd::yield();
        }
      });
    auto l = herd::net::start_listener(
        "busy", {.bind = "127.0.0.1", .max_connections = static_cast<std::size_t>(conns) + 10, .backlog = 512},
        [](tcp_socket s) { (void)s.recv(0, 10s); });
    REQUIRE(l);
    uint16_t port = l->port;
    overflow_before = listen_overflows();
    std::vector<raw_client> cs(static_cast<std::size_t>(conns));
    std::thread burst([&] {
      auto t0 = std::chrono::steady_clock::now();
      for (auto& c : cs) connected += c.connect(port);
      burst_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    });
    burst.join();
    herd::test::eventually([&] { return herd::net::info("busy")->accepts >= static_cast<uint64_t>(conns); }, 20s);
    accepted = herd::net::info("busy")->accepts;
    overflow_after = listen_overflows();
    stop = true;
    for (auto& c : cs) c.close();
    REQUIRE(herd::net::stop_listener("busy"));
    CHECK(spins.load() > 0);
  });
  INFO("burst of " << conns << " connects took " << burst_ms << " ms");
  CHECK(connected == conns);
  CHECK(accepted == static_cast<uint64_t>(conns));
  if (overflow_before >= 0) CHECK(overflow_after == overflow_before);
}
