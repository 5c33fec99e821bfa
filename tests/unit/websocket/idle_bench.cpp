// ws_idlebench: user-space bytes per idle WebSocket connection. Opens
// warm-up connections (pools and caches filled), then N more, waits until
// every connection process has hibernated, and prints the RSS growth per
// connection as one RESULT line. The clients are raw blocking sockets in
// this process's threads: their cost is kernel memory (not in RSS) and the
// few bytes of a raw_client. 127.0.0.1 only; bounded.
//
//   ws_idlebench [N=2000] [WARMUP=200]
//   ws_idlebench --serve   the same echo server alone, for clients in another
//                          process (tools/c1000k/ws_kernel_mem.py measures
//                          kernel socket memory with it): prints
//                          "listening on 127.0.0.1:PORT", serves until its
//                          stdin closes.
#include "support/ws_client.hpp"
#include "support/ws_server.hpp"

#include <unistd.h>

#include <fstream>
#include <iostream>
#include <string_view>
#include <vector>

using namespace std::chrono_literals;

namespace {

long rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

// Opens n clients on the blocking pool and collects the connections' pids.
bool open_clients(uint16_t port, int n, std::vector<ws_test::ws_client>& out, std::vector<herd::pid>& pids) {
  std::size_t first = out.size();
  out.resize(first + n);
  bool ok = herd::blocking([&] {
    for (int i = 0; i < n; ++i)
      if (!out[first + i].upgraded(port)) return false;
    return true;
  });
  for (int i = 0; i < n && ok; ++i) {
    herd::pid p = herd::receive([](const ws_test::echo_opened& m) { return m.conn; },
                                herd::after(10s, [] { return herd::pid{}; }));
    if (!p.valid()) return false;
    pids.push_back(p);
  }
  return ok;
}

bool all_hibernated(const std::vector<herd::pid>& pids) {
  for (auto p : pids)
    if (!herd::test::eventually_hibernated(p, 30s)) return false;
  return true;
}

// The echo server with the measured options, until stdin closes.
int serve_alone() {
  herd::set_logging(false);
  herd::node_options no;
  no.workers = 1;
  no.quiet = true;
  herd::node node(no);
  int rc = 1;
  node.run([&] {
    herd::ws::options o;
    o.idle_hibernate = 100ms;
    o.ping_interval = 25s;
    o.timeout_code = 4000;
    uint16_t port = ws_test::start_echo_server("ws_alone", o);
    if (!port) return;
    std::cout << "listening on 127.0.0.1:" << port << std::endl;
    herd::blocking([] {
      char b[256];
      while (::read(0, b, sizeof b) > 0) {
      }
    });
    (void)herd::net::stop_listener("ws_alone");
    rc = 0;
  });
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "--serve") return serve_alone();
  int n = argc > 1 ? std::atoi(argv[1]) : 2000;
  int warm = argc > 2 ? std::atoi(argv[2]) : 200;
  herd::set_logging(false);
  herd::node_options no;
  no.workers = 1;
  no.quiet = true;
  herd::node node(no);
  int rc = 1;
  node.run([&] {
    herd::ws::options o;
    o.idle_hibernate = 100ms;
    o.ping_interval = 25s;  // the gateway's default: pings do not wake idle connections during the run
    o.timeout_code = 4000;
    uint16_t port = ws_test::start_echo_server("ws_idle", o, herd::self());
    if (!port) return;
    std::vector<ws_test::ws_client> clients;
    clients.reserve(std::size_t(n + warm));  // the clients' own vector does not grow during the measure
    std::vector<herd::pid> pids;
    pids.reserve(std::size_t(n + warm));
    if (!open_clients(port, warm, clients, pids) || !all_hibernated(pids)) {
      std::cerr << "warm-up failed\n";
      return;
    }
    long before = rss_kib();
    if (!open_clients(port, n, clients, pids) || !all_hibernated(pids)) {
      std::cerr << "opening " << n << " connections failed\n";
      return;
    }
    long after = rss_kib();
    double per = double(after - before) * 1024.0 / n;
    std::cout << "RESULT bench=ws_idle connections=" << n << " rss_before_kib=" << before << " rss_after_kib=" << after
              << " bytes_per_idle_connection=" << long(per) << " budget=2000" << std::endl;
    rc = 0;
    clients.clear();
    (void)herd::net::stop_listener("ws_idle");
  });
  return rc;
}
