// ws_stallbench: the server's CPU while WebSocket connections are stalled —
// each has frames queued that its client does not read. A writer that waits
// for the socket's tcp_writable costs nothing then; one that polls on a
// timer wakes every connection again and again. Opens N clients (small
// receive buffers), pushes frames to each until its queue shows some, then
// measures this process's CPU time (getrusage) over WINDOW_MS while nothing
// else happens, and prints one RESULT line. The clients are raw sockets that
// never read; 127.0.0.1 only; bounded.
//
//   ws_stallbench [N=200] [WINDOW_MS=2000]
#include "support/ws_client.hpp"
#include "support/ws_server.hpp"

#include <herd/actors/introspect.hpp>

#include <sys/resource.h>
#include <sys/socket.h>

#include <iostream>
#include <vector>

using namespace std::chrono_literals;

namespace {

double cpu_ms() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return (double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3) + double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

uint64_t queued(herd::pid p) {
  auto i = herd::introspect::process_info(p);
  return i ? i->row.out_frames : 0;
}

}  // namespace

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 200;
  int window = argc > 2 ? std::atoi(argv[2]) : 2000;
  herd::set_logging(false);
  herd::node_options no;
  no.workers = 1;
  no.quiet = true;
  herd::node node(no);
  int rc = 1;
  node.run([&] {
    herd::ws::options o;
    o.max_queued_frames = 100000;
    o.max_queued_bytes = std::size_t(64) << 20;
    uint16_t port = ws_test::start_echo_server("ws_stall", o, herd::self());
    if (!port) return;
    std::vector<ws_test::ws_client> clients(static_cast<std::size_t>(n));
    bool ok = herd::blocking([&] {
      for (auto& c : clients) {
        if (!c.sock.connect(port)) return false;
        int small = 128 * 1024;
        ::setsockopt(c.sock.fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
        c.send_raw("GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
        std::string head;
        while (head.find("\r\n\r\n") == std::string::npos) {
          std::string b = c.sock.recv_n(1, 10000);
          if (b.empty()) return false;
          head += b;
        }
      }
      return true;
    });
    std::vector<herd::pid> pids;
    for (int i = 0; i < n && ok; ++i) {
      herd::pid p = herd::receive([](const ws_test::echo_opened& m) { return m.conn; },
                                  herd::after(10s, [] { return herd::pid{}; }));
      ok = p.valid();
      pids.push_back(p);
    }
    if (!ok) {
      std::cerr << "opening " << n << " connections failed\n";
      return;
    }
    const std::string frame(64 * 1024, 'x');
    for (auto p : pids) {
      for (int sent = 0; sent < 256 && queued(p) == 0; sent += 16) {
        for (int k = 0; k < 16; ++k) herd::send(p, frame);
        herd::test::eventually([&] { return queued(p) > 0; }, 50ms);
      }
      if (queued(p) == 0) {
        std::cerr << "a connection never stalled\n";
        return;
      }
    }
    double c0 = cpu_ms();
    herd::sleep(std::chrono::milliseconds(window));  // the measured window (nothing to synchronise)
    double used = cpu_ms() - c0;
    std::cout << "RESULT bench=ws_stall connections=" << n << " window_ms=" << window << " cpu_ms=" << used
              << " cpu_us_per_connection_per_s=" << used * 1e3 / n / (window / 1e3) << std::endl;
    rc = 0;
    clients.clear();
    (void)herd::net::stop_listener("ws_stall");
  });
  return rc;
}
