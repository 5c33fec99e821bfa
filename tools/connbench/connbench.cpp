// connbench: a TCP load generator for echo and chat servers (no herd code).
//
// Design
// - Closed loop: every connection keeps exactly one message outstanding, so
//   the offered load adapts to the server and rt_per_s measures what the
//   server sustains at N concurrent connections, not what we push at it.
// - T worker threads (default 1: the generator is usually pinned to one core
//   so that it does not steal the server's core). Each owns a disjoint slice
//   of the connections and its own epoll instance; nothing is shared on the
//   per-message path except relaxed single-writer counters that the main
//   thread reads for progress lines and snapshots.
// - Sockets are non-blocking, TCP_NODELAY, registered edge-triggered for
//   IN|OUT once. Partial reads and writes resume from per-connection offsets;
//   payload bytes are regenerated from (connection id, message seq, offset)
//   rather than stored, so every echoed byte is checked without a payload
//   buffer per connection and without allocating per message.
// - Connects are paced (--rate per second, shared by the threads) and a
//   connection is "ready" only once the server has served it (first echo,
//   JOIN acknowledged): on Linux connect() can succeed while the server's
//   accept queue overflows, which would hide a slow acceptor.
// - The measurement window is the difference of two snapshots (counters and
//   a log-bucket histogram with < 1% error) taken by the main thread, so the
//   workers never stop or reset anything; the server's CPU and RSS come from
//   /proc/PID at the same instants.
// - Modes: echo (throughput + latency), idle (memory per idle connection:
//   server RSS before connecting vs after all are connected and idle), chat
//   (one non-member sender, M room members measuring fan-out latency).
#include <arpa/inet.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "churn.hpp"
#include "cli.hpp"
#include "stats.hpp"
#include "worker.hpp"

using namespace connbench;

[[noreturn]] void connbench::usage_error(const std::string& msg) {
  std::fprintf(stderr,
               "connbench: %s\n"
               "usage: connbench --port P [--host 127.0.0.1] [--connections N] [--payload 64]\n"
               "       [--duration S] [--warmup S] [--rate CONNECTS_PER_S] [--threads T]\n"
               "       [--server-pid PID] [--idle S] [--mode echo|chat] [--client et|lt] [--room-members M]\n"
               "       [--msg-rate MSGS_PER_S] [--connect-timeout S] [--sources K]\n"
               "       churn: --hold H [--hold-kind real|ghost] [--cycles C] [--cycle-concurrency K] [--settle S]\n",
               msg.c_str());
  std::exit(2);
}

namespace {

Config parse(int argc, char** argv, ChurnConfig& ch, bool& churn) {
  Config c;
  std::string host = "127.0.0.1", mode = "echo", hold_kind, client = "et";
  bool cycles_given = false, concurrency_given = false;
  int port = -1, members = -1, sources = 0;
  for (int i = 1; i < argc; ++i) {
    std::string o = argv[i];
    if (o == "--help" || o == "-h") {
      std::printf("see tools/connbench/README.md\n");
      std::exit(0);
    }
    if (i + 1 >= argc) usage_error("missing value for " + o);
    const char* v = argv[++i];
    if (o == "--host") host = v;
    else if (o == "--port") port = parse_int(o, v, 1, 65535);
    else if (o == "--connections") c.connections = parse_int(o, v, 1, 10'000'000);
    else if (o == "--payload") c.payload = parse_int(o, v, 1, 1 << 20);
    else if (o == "--duration") c.duration = parse_num(o, v, 0.1, 86400);
    else if (o == "--warmup") c.warmup = parse_num(o, v, 0, 86400);
    else if (o == "--rate") c.rate = parse_num(o, v, 1, 1e7);
    else if (o == "--threads") c.threads = parse_int(o, v, 1, 256);
    else if (o == "--server-pid") c.server_pid = parse_int(o, v, 1, 1L << 30);
    else if (o == "--idle") c.idle = parse_num(o, v, 0.1, 86400);
    else if (o == "--mode") mode = v;
    else if (o == "--client") client = v;
    else if (o == "--room-members") members = parse_int(o, v, 1, 10'000'000);
    else if (o == "--msg-rate") c.msg_rate = parse_num(o, v, 0.1, 1e6);
    else if (o == "--connect-timeout") c.connect_timeout = parse_num(o, v, 0.1, 3600);
    else if (o == "--sources") sources = parse_int(o, v, 1, 254);
    else if (o == "--hold") ch.hold = parse_int(o, v, 0, 10'000'000), churn = true;
    else if (o == "--hold-kind") hold_kind = v;
    else if (o == "--cycles") ch.cycles = parse_int(o, v, 1, 100'000'000), cycles_given = true;
    else if (o == "--cycle-concurrency") ch.concurrency = parse_int(o, v, 1, 1024), concurrency_given = true;
    else if (o == "--settle") ch.settle = parse_num(o, v, 0, 3600), concurrency_given = true;
    else usage_error("unknown option " + o);
  }
  if (port < 0) usage_error("--port is required");
  c.dst.sin_family = AF_INET;
  c.dst.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &c.dst.sin_addr) != 1)
    usage_error("--host wants a numeric IPv4 address, got '" + host + "'");
  if (mode == "chat") {
    if (members < 0) usage_error("--mode chat needs --room-members M");
    if (c.idle > 0) usage_error("--idle and --mode chat do not combine");
    c.mode = Mode::chat;
    c.connections = members;
  } else if (mode == "echo") {
    if (members >= 0) usage_error("--room-members only applies to --mode chat");
    c.mode = c.idle > 0 ? Mode::idle : Mode::echo;
  } else {
    usage_error("--mode wants echo or chat, got '" + mode + "'");
  }
  if (client == "lt") c.client = Client::lt;
  else if (client != "et") usage_error("--client wants et or lt, got '" + client + "'");
  if (c.client == Client::lt && (c.mode == Mode::chat || churn))
    usage_error("--client lt applies to echo and idle runs only");
  c.sources = loopback_sources(sources);
  if (!churn && (!hold_kind.empty() || cycles_given || concurrency_given))
    usage_error("--hold-kind, --cycles, --cycle-concurrency and --settle need --hold H");
  if (churn) {
    if (c.mode != Mode::echo) usage_error("--hold (churn) does not combine with --idle or --mode chat");
    if (hold_kind == "ghost") ch.ghost = true;
    else if (!hold_kind.empty() && hold_kind != "real")
      usage_error("--hold-kind wants real or ghost, got '" + hold_kind + "'");
  }
  return c;
}

void check_port_range(const Config& c, long conns) {
  std::ifstream f("/proc/sys/net/ipv4/ip_local_port_range");
  long lo = 0, hi = 0;
  if (!(f >> lo >> hi)) return;
  long per_dest = (hi - lo + 1) * static_cast<long>(std::max<size_t>(1, c.sources.size()));
  if (conns > per_dest)
    std::fprintf(stderr,
                 "connbench: WARNING: %ld connections to one address:port but only %ld local ports\n"
                 "  (ip_local_port_range %ld-%ld x %zu source address(es)); expect EADDRNOTAVAIL.\n"
                 "  Widen net.ipv4.ip_local_port_range or use --sources K.\n",
                 conns, per_dest, lo, hi, std::max<size_t>(1, c.sources.size()));
}

struct Snap {
  uint64_t t = 0, ready = 0, failed = 0, rt = 0, deliveries = 0, disconnects = 0, mismatches = 0,
           errors = 0;
  std::vector<uint64_t> hist;
  double server_cpu = 0, self_cpu = 0;
  bool server_ok = false;
};

Snap snap(const std::vector<std::unique_ptr<Worker>>& ws, long pid) {
  Snap s;
  s.t = now_ns();
  s.hist.assign(Histogram::kBuckets, 0);
  std::vector<uint64_t> h;
  for (auto& w : ws) {
    s.ready += w->ready.load(std::memory_order_relaxed);
    s.failed += w->failed.load(std::memory_order_relaxed);
    s.rt += w->round_trips.load(std::memory_order_relaxed);
    s.deliveries += w->deliveries.load(std::memory_order_relaxed);
    s.disconnects += w->disconnects.load(std::memory_order_relaxed);
    s.mismatches += w->mismatches.load(std::memory_order_relaxed);
    s.errors += w->errors.load(std::memory_order_relaxed);
    w->hist.snapshot_into(h);
    for (size_t i = 0; i < h.size(); ++i) s.hist[i] += h[i];
  }
  s.self_cpu = self_cpu_s();
  if (pid) {
    ProcCpu c = read_proc_cpu(pid);
    s.server_ok = c.ok;
    s.server_cpu = c.seconds;
  }
  return s;
}

std::vector<uint64_t> diff(const std::vector<uint64_t>& b, const std::vector<uint64_t>& a) {
  std::vector<uint64_t> d(b.size());
  for (size_t i = 0; i < b.size(); ++i) d[i] = b[i] - a[i];
  return d;
}

double secs(uint64_t ns) { return static_cast<double>(ns) / 1e9; }

uint64_t g_t0 = 0;  // start of the run, for progress lines

// Sleeps up to `seconds`, printing a progress line every second; stops early
// when done() says so. Returns false if it timed out while done() was false.
template <class Done>
bool wait_for(double seconds, const std::vector<std::unique_ptr<Worker>>& ws, const Config& cfg,
              Snap& last, const char* phase, Done done) {
  const uint64_t end = now_ns() + static_cast<uint64_t>(seconds * 1e9);
  const long total = cfg.mode == Mode::chat ? cfg.connections + 1 : cfg.connections;
  while (now_ns() < end) {
    if (done()) return true;
    usleep(50'000);
    if (now_ns() - last.t >= 1'000'000'000) {
      Snap s = snap(ws, 0);
      double dt = secs(s.t - last.t);
      Percentiles p = percentiles(diff(s.hist, last.hist));
      double rate = static_cast<double>(cfg.mode == Mode::chat ? s.deliveries - last.deliveries
                                                               : s.rt - last.rt) / dt;
      std::fprintf(stderr, "[%6.1fs %s] connected=%llu/%ld failed=%llu %s=%.0f p99=%.0fus disconnects=%llu\n",
                   secs(s.t - g_t0), phase, static_cast<unsigned long long>(s.ready), total,
                   static_cast<unsigned long long>(s.failed), cfg.mode == Mode::chat ? "deliveries/s" : "rt/s",
                   rate, p.p99_us, static_cast<unsigned long long>(s.disconnects));
      last = std::move(s);
    }
  }
  return done();
}

}  // namespace

int main(int argc, char** argv) {
  ChurnConfig ch;
  bool churn = false;
  Config cfg = parse(argc, argv, ch, churn);
  signal(SIGPIPE, SIG_IGN);
  if (churn) {
    // Real holds keep a descriptor each; ghosts and cycles one per thread.
    const long held_fds = ch.ghost ? 0 : ch.hold;
    check_fd_limit("connbench", held_fds + ch.concurrency + 64L);
    check_port_range(cfg, held_fds + ch.concurrency);
    if (cfg.server_pid && read_proc_rss_kb(cfg.server_pid) < 0) usage_error("--server-pid: no such process");
    return run_churn(cfg, ch);
  }
  const long total = cfg.mode == Mode::chat ? cfg.connections + 1 : cfg.connections;
  check_fd_limit("connbench", total + 64L * cfg.threads + 64);
  check_port_range(cfg, total);
  if (cfg.server_pid && read_proc_rss_kb(cfg.server_pid) < 0) usage_error("--server-pid: no such process");
  if (cfg.threads > total) cfg.threads = static_cast<int>(total);

  Control ctl;
  const ListenCounters lc0 = read_listen_counters();
  const long long port_drops0 = read_port_listen_drops(cfg.dst.sin_port);
  const long rss_before = cfg.server_pid ? read_proc_rss_kb(cfg.server_pid) : -1;

  std::vector<std::unique_ptr<Worker>> ws;
  const int members = cfg.connections;
  for (int t = 0, first = 0; t < cfg.threads; ++t) {
    int n = members / cfg.threads + (t < members % cfg.threads ? 1 : 0);
    ws.push_back(std::make_unique<Worker>(cfg, ctl, static_cast<uint32_t>(first), n,
                                          cfg.mode == Mode::chat && t == 0));
    first += n;
  }
  ctl.t_start_ns = g_t0 = now_ns();
  std::vector<std::thread> threads;
  for (auto& w : ws) threads.emplace_back([&w] { w->run(); });

  Snap last = snap(ws, 0);
  auto resolved = [&] {
    uint64_t r = 0;
    for (auto& w : ws) r += w->ready.load() + w->failed.load();
    return r >= static_cast<uint64_t>(total);
  };
  const double ramp_limit = static_cast<double>(total) / cfg.rate + cfg.connect_timeout + 5;
  const bool ramp_complete = wait_for(ramp_limit, ws, cfg, last, "connect", resolved);
  uint64_t last_resolved = 0;
  for (auto& w : ws) last_resolved = std::max(last_resolved, w->last_resolved_ns.load());
  const double ramp_s = ramp_complete ? secs(last_resolved - ctl.t_start_ns) : secs(now_ns() - ctl.t_start_ns);
  if (!ramp_complete) std::fprintf(stderr, "connbench: connect phase incomplete after %.0fs\n", ramp_limit);
  const Snap at_ramp = snap(ws, 0);

  auto never = [] { return false; };
  Snap a, b;
  long rss_end = -1;
  uint64_t drained_sent = 0;
  if (cfg.mode == Mode::echo) {
    wait_for(cfg.warmup, ws, cfg, last, "warmup", never);
    a = snap(ws, cfg.server_pid);
    wait_for(cfg.duration, ws, cfg, last, "measure", never);
    b = snap(ws, cfg.server_pid);
    if (cfg.server_pid) rss_end = read_proc_rss_kb(cfg.server_pid);
  } else if (cfg.mode == Mode::idle) {
    a = snap(ws, cfg.server_pid);
    wait_for(cfg.idle, ws, cfg, last, "idle", never);
    b = snap(ws, cfg.server_pid);
    if (cfg.server_pid) rss_end = read_proc_rss_kb(cfg.server_pid);
  } else {
    a = snap(ws, cfg.server_pid);
    ctl.phase.store(kChatSend);
    wait_for(cfg.duration, ws, cfg, last, "send", never);
    ctl.phase.store(kChatDrain);
    drained_sent = ctl.msgs_sent.load();
    // Give the last messages up to 3 s to reach every member.
    wait_for(3, ws, cfg, last, "drain", [&] {
      uint64_t d = 0;
      for (auto& w : ws) d += w->deliveries.load();
      return d >= drained_sent * static_cast<uint64_t>(members);
    });
    b = snap(ws, cfg.server_pid);
    if (cfg.server_pid) rss_end = read_proc_rss_kb(cfg.server_pid);
  }
  // Before the teardown: segments that arrive for connections the server
  // already closed are dropped at the listener too, and are not the figure.
  const long long port_drops1 = read_port_listen_drops(cfg.dst.sin_port);
  ctl.phase.store(kStop);
  for (auto& t : threads) t.join();
  const ListenCounters lc1 = read_listen_counters();
  const Snap fin = snap(ws, 0);

  const double window = secs(b.t - a.t);
  const Percentiles p = percentiles(diff(b.hist, a.hist));
  std::string out = "RESULT tool=connbench";
  char buf[512];
  auto add = [&](const char* fmt, auto... v) {
    std::snprintf(buf, sizeof buf, fmt, v...);
    out += buf;
  };
  auto ull = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  if (cfg.mode == Mode::echo) {
    const double rt = static_cast<double>(b.rt - a.rt);
    add(" mode=echo client=%s connections=%d payload=%d rt_per_s=%.0f p50_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f",
        cfg.client == Client::lt ? "lt" : "et", cfg.connections, cfg.payload, rt / window, p.p50_us, p.p99_us, p.p999_us, p.max_us);
    add(" connected=%llu failed=%llu disconnects=%llu mismatches=%llu connect_ramp_s=%.3f", ull(at_ramp.ready),
        ull(fin.failed), ull(fin.disconnects), ull(fin.mismatches), ramp_s);
    // Every round trip's reply is compared byte for byte, warm-up included.
    add(" bytes_checked=%llu", ull(fin.rt * static_cast<uint64_t>(cfg.payload)));
    if (cfg.server_pid && a.server_ok && b.server_ok) {
      const double cpu = b.server_cpu - a.server_cpu;
      add(" rss_kb=%ld server_cpu_s=%.2f cpu_us_per_rt=%.3f", rss_end, cpu, rt > 0 ? cpu * 1e6 / rt : 0.0);
    }
    add(" client_cpu_s=%.2f", b.self_cpu - a.self_cpu);
  } else if (cfg.mode == Mode::idle) {
    add(" mode=idle connections=%d payload=%d idle_s=%.1f connected=%llu failed=%llu disconnects=%llu"
        " mismatches=%llu connect_ramp_s=%.3f",
        cfg.connections, cfg.payload, cfg.idle, ull(at_ramp.ready), ull(fin.failed), ull(fin.disconnects),
        ull(fin.mismatches), ramp_s);
    if (cfg.server_pid && rss_end >= 0 && rss_before >= 0) {
      add(" rss_before_kb=%ld rss_kb=%ld bytes_per_idle_conn=%.0f", rss_before, rss_end,
          static_cast<double>(rss_end - rss_before) * 1024.0 / cfg.connections);
      if (a.server_ok && b.server_ok) add(" server_cpu_s=%.2f", b.server_cpu - a.server_cpu);
    }
  } else {
    uint64_t missing = 0;
    for (auto& w : ws) missing += w->missing;
    add(" mode=chat members=%d messages=%llu deliveries=%llu p50_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f"
        " missing=%llu errors=%llu connected=%llu failed=%llu disconnects=%llu connect_ramp_s=%.3f",
        members, ull(ctl.msgs_sent.load()), ull(fin.deliveries - a.deliveries), p.p50_us, p.p99_us, p.p999_us,
        p.max_us, ull(missing), ull(fin.errors), ull(at_ramp.ready), ull(fin.failed), ull(fin.disconnects),
        ramp_s);
    if (cfg.server_pid && a.server_ok && b.server_ok)
      add(" rss_kb=%ld server_cpu_s=%.2f", rss_end, b.server_cpu - a.server_cpu);
    add(" client_cpu_s=%.2f", b.self_cpu - a.self_cpu);
  }
  if (lc0.ok && lc1.ok)
    add(" listen_overflows=%llu listen_drops=%llu", ull(lc1.overflows - lc0.overflows), ull(lc1.drops - lc0.drops));
  if (port_drops0 >= 0 && port_drops1 >= 0) add(" server_listen_drops=%lld", port_drops1 - port_drops0);
  add(" threads=%d ramp_complete=%d", cfg.threads, ramp_complete ? 1 : 0);
  std::printf("%s\n", out.c_str());
  std::fflush(stdout);
  return 0;
}
