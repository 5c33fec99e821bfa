// Acceptors keep pace on a busy node: with both workers saturated by busy
// processes, a burst of connections into a backlog of 512 is accepted in
// full and the listening socket drops no SYN (listen_drops, read from the
// socket: the namespace-wide ListenOverflows also counts other processes'
// listeners, and did on a shared CI host). Runs alone (net_load_tests is
// SERIAL); when it fails, the message says how long the OS kept the workers
// waiting for a CPU during the burst.
#include "net_fixture.hpp"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

using namespace net_test;
using herd::net::tcp_socket;

namespace {

// Nanoseconds the runtime's worker threads (named herd-w<N>) have spent
// runnable but waiting for a CPU (schedstat's second field): the time the
// OS, not herd, kept them off the CPU.
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

}  // namespace

TEST_CASE("with both workers saturated, a burst of connects is accepted in full without listen overflows", "[net][listener][load]") {
  const int conns = static_cast<int>(herd::test::scaled(2000, 1000));
  uint64_t accepted = 0;
  uint64_t drops_before = 0, drops_after = 0, delay_ns = 0;
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
    drops_before = herd::net::info("busy")->listen_drops;
    uint64_t delay0 = workers_run_delay_ns();
    std::vector<raw_client> cs(static_cast<std::size_t>(conns));
    std::thread burst([&] {
      auto t0 = std::chrono::steady_clock::now();
      for (auto& c : cs) connected += c.connect(port);
      burst_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    });
    burst.join();
    delay_ns = workers_run_delay_ns() - delay0;
    herd::test::eventually([&] { return herd::net::info("busy")->accepts >= static_cast<uint64_t>(conns); }, 20s);
    accepted = herd::net::info("busy")->accepts;
    drops_after = herd::net::info("busy")->listen_drops;
    stop = true;
    for (auto& c : cs) c.close();
    REQUIRE(herd::net::stop_listener("busy"));
    CHECK(spins.load() > 0);
  });
  INFO("burst of " << conns << " connects took " << burst_ms << " ms; the workers waited " << delay_ns / 1e6
                    << " ms for a CPU; " << drops_after - drops_before << " dropped");
  CHECK(connected == conns);
  CHECK(accepted == static_cast<uint64_t>(conns));
#if defined(__SANITIZE_THREAD__)
  // Keeping pace is a claim about the release build's speed; under TSan the
  // acceptors run 5-15x slower and the test is here for its races.
  if (drops_after != drops_before) WARN("TSan build: " << drops_after - drops_before << " dropped (not checked)");
#else
  CHECK(drops_after == drops_before);
#endif
}
