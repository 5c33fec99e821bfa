// c1000k: what one idle session costs a node, measured with in-memory
// transports (herd::net::memory_transport) instead of kernel sockets, so
// that a million of them fit one machine's file descriptors and ports.
//
// Each session is a memory pair whose server end is held by a connection
// process that echoes one message per arm ({active, once}) and hibernates
// between messages; the driver (this program's root process) holds every
// client end, makes one echo round trip per session to know it is set up,
// waits until the connection processes have given their stacks back, and
// reads the resident set size.
//
//   c1000k [--baseline] [sessions...]   (default: 100000; e.g. c1000k 100000 1000000)
//
// --baseline: the same processes, hibernating, pinged with plain messages and
// no transport: what the process alone costs (the difference is the pair's).
// --speed: one pair between two processes: 1-byte round trips ({active,
// once} on both sides, the server not hibernating) and a 256 MiB stream
// (64 KiB sends into the default 64 KiB buffer, the reader in active once).
//
// --ws SESSIONS [...]: the WebSocket mode (ws_main.cpp, ws_room.hpp): real
// herd::ws sessions over memory transports, a room broadcast and a probe.
//
// One RESULT line per size. bytes_per_idle_session is the RSS growth divided
// by the sessions: both ends of the pair, the connection process (hibernated,
// with its continuation) and the driver's 16-byte handle. No protocol state:
// the WebSocket layer's per-connection state comes on top.
// Not a test: a figure for docs/design.md.
#include <herd/actors.hpp>
#include <herd/net.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string_view>
#include <vector>

using herd::net::active;
using herd::net::memory_transport;

namespace {

long rss_bytes() {
  std::ifstream f("/proc/self/statm");
  long size = 0, resident = 0;
  f >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

// The connection process between messages: hibernated, holding its end.
void serve(memory_transport s) {
  herd::hibernate([s = std::move(s)]() mutable {
    bool open = true;
    herd::receive(
        [&](herd::net::tcp_data& d) {
          if (!s.send(d.data.view()) || !s.set_active(active::once())) open = false;
        },
        [&](const herd::net::tcp_closed&) { open = false; }, [&](const herd::net::tcp_error&) { open = false; });
    if (open) serve(std::move(s));
  });
}

// Opens `count` sessions onto `out`, `batch` at a time, each with one echo.
bool open_sessions(std::vector<memory_transport>& out, std::size_t count) {
  constexpr std::size_t batch = 2000;
  for (std::size_t done = 0; done < count;) {
    std::size_t k = std::min(batch, count - done);
    for (std::size_t i = 0; i < k; ++i) {
      auto c = herd::net::memory_connect([](memory_transport s) {
        if (s.set_active(active::once())) serve(std::move(s));
      });
      if (!c) {
        std::printf("memory_connect: %s\n", c.error().message().c_str());
        return false;
      }
      if (!c->client.set_active(active::once()) || !c->client.send("x")) return false;
      out.push_back(std::move(c->client));
    }
    for (std::size_t i = 0; i < k; ++i) {
      bool ok = herd::receive([](herd::net::tcp_data&) { return true; },
                              herd::after(std::chrono::seconds(60), [] { return false; }));
      if (!ok) {
        std::printf("no echo after 60 s\n");
        return false;
      }
    }
    done += k;
  }
  return true;
}

struct ping {
  herd::pid from;
  bool stop;
};
struct pong {};

void idle_process() {
  herd::hibernate([] {
    bool more = herd::receive([](const ping& p) {
      if (!p.stop) herd::send(p.from, pong{});
      return !p.stop;
    });
    if (more) idle_process();
  });
}

// The baseline: `count` hibernating processes, each pinged once.
bool open_processes(std::vector<herd::pid>& out, std::size_t count) {
  constexpr std::size_t batch = 2000;
  for (std::size_t done = 0; done < count;) {
    std::size_t k = std::min(batch, count - done);
    for (std::size_t i = 0; i < k; ++i) {
      herd::pid p = herd::spawn([] { idle_process(); });
      herd::send(p, ping{herd::self(), false});
      out.push_back(p);
    }
    for (std::size_t i = 0; i < k; ++i)
      if (!herd::receive([](const pong&) { return true; }, herd::after(std::chrono::seconds(60), [] { return false; })))
        return false;
    done += k;
  }
  return true;
}

void speed() {
  constexpr int trips = 200000;
  auto c = herd::net::memory_connect([](memory_transport s) {
    if (!s.set_active(active::once())) return;
    for (bool open = true; open;)
      herd::receive(
          [&](herd::net::tcp_data& d) {
            if (!s.send(d.data.view()) || !s.set_active(active::once())) open = false;
          },
          [&](const herd::net::tcp_closed&) { open = false; });
  });
  if (!c) return;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < trips; ++i) {
    if (!c->client.set_active(active::once()) || !c->client.send("p")) return;
    herd::receive([](herd::net::tcp_data&) {});
  }
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / trips;
  c->client.close();
  constexpr std::size_t total = std::size_t(256) << 20;
  std::string chunk(64 * 1024, 'z');
  auto sink = herd::net::memory_connect([total, me = herd::self()](memory_transport s) {
    std::size_t got = 0;
    while (got < total && s.set_active(active::once()))
      herd::receive([&](herd::net::tcp_data& d) { got += d.data.size(); });
    herd::send(me, got);
  });
  if (!sink) return;
  t0 = std::chrono::steady_clock::now();
  for (std::size_t sent = 0; sent < total; sent += chunk.size())
    if (!sink->client.send(chunk)) return;
  std::size_t got = herd::receive([](std::size_t n) { return n; });
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("RESULT c1000k_speed round_trip_us=%.2f stream_mib_per_s=%.0f stream_bytes=%zu\n", us,
              double(got) / double(1 << 20) / s, got);
}

// Waits until at most `slack` stacks are in use (the rest hibernated).
void settle(herd::node& node, uint64_t slack) {
  for (int i = 0; i < 5000 && node.runtime().metrics().stacks_in_use > slack; ++i)
    herd::sleep(std::chrono::milliseconds(2));
  herd::sleep(std::chrono::milliseconds(200));  // a measuring program, not a test
}

}  // namespace

int ws_main(int argc, char** argv);

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "--ws") return ws_main(argc, argv);
  std::vector<std::size_t> sizes;
  bool baseline = false, speed_only = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--baseline") baseline = true;
    else if (std::string_view(argv[i]) == "--speed") speed_only = true;
    else sizes.push_back(std::strtoull(argv[i], nullptr, 10));
  }
  if (sizes.empty()) sizes.push_back(100000);
  std::size_t largest = 0;
  for (std::size_t n : sizes) {
    if (n == 0) {
      std::fprintf(stderr, "usage: c1000k [sessions...] (each > 0)\n");
      return 2;
    }
    largest = std::max(largest, n);
  }
  herd::node_options no;
  no.workers = 2;
  no.quiet = true;
  no.max_actors = std::max<std::size_t>(no.max_actors, largest + 4096);
  herd::node node(no);
  int rc = 0;
  node.run([&] {
    if (speed_only) {
      speed();
      return;
    }
    if (baseline) {
      for (std::size_t n : sizes) {
        std::vector<herd::pid> warm, procs;
        procs.reserve(n);
        if (!open_processes(warm, 1000)) {
          rc = 1;
          return;
        }
        settle(node, 64);
        long before = rss_bytes();
        if (!open_processes(procs, n)) {
          rc = 1;
          return;
        }
        settle(node, 64);
        long after = rss_bytes();
        std::printf("RESULT c1000k_baseline processes=%zu rss_growth_bytes=%ld bytes_per_idle_process=%.0f "
                    "driver_pid_bytes=%zu stacks_in_use=%llu\n",
                    n, after - before, double(after - before) / double(n), sizeof(herd::pid),
                    (unsigned long long)node.runtime().metrics().stacks_in_use);
        std::fflush(stdout);
        for (herd::pid p : warm) herd::send(p, ping{herd::self(), true});
        for (herd::pid p : procs) herd::send(p, ping{herd::self(), true});
        for (int i = 0; i < 10000 && herd::current_node_stats().live_processes > 1; ++i)
          herd::sleep(std::chrono::milliseconds(2));
      }
      return;
    }
    for (std::size_t n : sizes) {
      std::vector<memory_transport> warm;
      if (!open_sessions(warm, 1000)) {  // pools, allocator arenas, the process table's pages
        rc = 1;
        return;
      }
      std::vector<memory_transport> sessions;
      sessions.reserve(n);
      settle(node, 64);
      long before = rss_bytes();
      auto t0 = std::chrono::steady_clock::now();
      if (!open_sessions(sessions, n)) {
        rc = 1;
        return;
      }
      double setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      settle(node, 64);
      long after = rss_bytes();
      auto m = node.runtime().metrics();
      double per = double(after - before) / double(n);
      // One more round trip on every session: waking a hibernated session.
      t0 = std::chrono::steady_clock::now();
      for (auto& s : sessions)
        if (!s.set_active(active::once()) || !s.send("y")) rc = 1;
      for (std::size_t i = 0; i < n; ++i)
        if (!herd::receive([](herd::net::tcp_data&) { return true; },
                           herd::after(std::chrono::seconds(60), [] { return false; })))
          rc = 1;
      double wake_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf(
          "RESULT c1000k sessions=%zu rss_growth_bytes=%ld bytes_per_idle_session=%.0f "
          "driver_handle_bytes=%zu stacks_in_use=%llu live_processes=%zu setup_sessions_per_s=%.0f "
          "wake_all_round_trip_us_per_session=%.2f\n",
          n, after - before, per, sizeof(memory_transport), (unsigned long long)m.stacks_in_use,
          herd::current_node_stats().live_processes, double(n) / setup_s, wake_s * 1e6 / double(n));
      std::fflush(stdout);
      sessions.clear();
      warm.clear();
      for (int i = 0; i < 10000 && herd::current_node_stats().live_processes > 1; ++i)
        herd::sleep(std::chrono::milliseconds(2));
    }
  });
  return rc;
}
