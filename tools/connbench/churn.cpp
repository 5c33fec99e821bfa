// Churn: H connections are opened and held for the whole run, then C cycles
// of connect -> one checked round trip -> close run one after another
// (sequential: the latency of a cycle, and what the server spends on it
// when nothing else happens), then C more from `concurrency` threads at once
// (the throughput of connection turnover). The question is whether either
// grows with H: a listener holding 19,000 connections should turn one over
// as cheaply as one holding 100.
//
// Held connections are the echo mode's idle ones (a Worker: one checked
// echo each, then quiet), or with --hold-kind ghost, churn_server's ghosts:
// each is opened, asks "herd-ghost\n", reads "ghost\n" and is closed; the
// server keeps its connection process (see churn_server.cpp). Ghosts need
// no descriptor on either side, so H can be 100,000 under a 20,000 limit.
//
// Cycles use blocking sockets with SO_SNDTIMEO / SO_RCVTIMEO set to
// --connect-timeout (connect honours SO_SNDTIMEO), one thread per
// concurrent stream: simple, and the client's cost per cycle is not what is
// measured (the server's CPU is, from /proc/PID/stat).
#include "churn.hpp"

#include "cli.hpp"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "stats.hpp"

namespace connbench {
namespace {

constexpr std::string_view kGhost = "herd-ghost\n";
constexpr std::string_view kGhostReply = "ghost\n";
constexpr std::string_view kCount = "herd-count\n";

std::mutex g_err_m;
std::string g_first_error;

bool fail(const char* what) {
  const int e = errno;
  std::lock_guard<std::mutex> g(g_err_m);
  if (g_first_error.empty()) g_first_error = std::string(what) + ": " + std::strerror(e);
  return false;
}

void fail_with(const char* what) {
  std::lock_guard<std::mutex> g(g_err_m);
  if (g_first_error.empty()) g_first_error = what;
}

// A blocking socket connected to cfg.dst, or -1. `n` picks the source address.
int dial(const Config& cfg, uint64_t n) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail("socket"), -1;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(cfg.connect_timeout);
  tv.tv_usec = static_cast<suseconds_t>((cfg.connect_timeout - static_cast<double>(tv.tv_sec)) * 1e6);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  // As the echo mode: several sources, each its own ephemeral port range
  // (every cycle leaves a TIME_WAIT on this side).
  if (!bind_source(fd, cfg.sources, n)) return fail("bind"), close(fd), -1;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&cfg.dst), sizeof cfg.dst) < 0)
    return fail("connect"), close(fd), -1;
  return fd;
}

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return fail("write");
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool read_exact(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) errno = ECONNRESET;  // the server closed before answering
    if (r <= 0) return fail("read");
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// Payload of cycle `n`: 8 bytes of n, then bytes that depend on it, so a
// reply meant for another connection does not pass.
void fill(uint64_t n, char* out, size_t len) {
  for (size_t i = 0; i < len; ++i)
    out[i] = i < 8 ? static_cast<char>(n >> (8 * i)) : static_cast<char>(n * 31 + i);
}

struct Stream {
  Histogram hist;
  uint64_t ok = 0, failed = 0, mismatches = 0;
  std::unique_ptr<char[]> wbuf, rbuf;
  explicit Stream(size_t payload) : wbuf(new char[payload]), rbuf(new char[payload]) {}
};

// One connect -> round trip -> close. The time runs from socket() to close().
void cycle(const Config& cfg, uint64_t n, Stream& s) {
  const uint64_t t0 = now_ns();
  const size_t len = static_cast<size_t>(cfg.payload);
  int fd = dial(cfg, n);
  if (fd < 0) return void(++s.failed);
  fill(n, s.wbuf.get(), len);
  bool ok = write_all(fd, s.wbuf.get(), len) && read_exact(fd, s.rbuf.get(), len);
  close(fd);
  if (!ok) return void(++s.failed);
  if (std::memcmp(s.wbuf.get(), s.rbuf.get(), len) != 0) return void(++s.mismatches);
  ++s.ok;
  s.hist.record(now_ns() - t0);
}

void ghost(const Config& cfg, uint64_t n, Stream& s) {
  int fd = dial(cfg, n);
  if (fd < 0) return void(++s.failed);
  char got[kGhostReply.size()];
  bool ok = write_all(fd, kGhost.data(), kGhost.size()) && read_exact(fd, got, sizeof got);
  close(fd);
  if (!ok) return void(++s.failed);
  if (std::string_view(got, sizeof got) != kGhostReply) return void(++s.mismatches);
  ++s.ok;
}

// churn_server's connection count (this connection included), or -1 from a
// server that just echoes the question.
long server_count(const Config& cfg) {
  int fd = dial(cfg, 0);
  if (fd < 0) return -1;
  std::string line;
  char c = 0;
  bool ok = write_all(fd, kCount.data(), kCount.size());
  while (ok && line.size() < 64 && read_exact(fd, &c, 1)) {
    line += c;
    if (c == '\n') break;
  }
  close(fd);
  if (line.rfind("count ", 0) != 0) return -1;
  return std::strtol(line.c_str() + 6, nullptr, 10);
}

// `total` calls of fn(n, stream) spread over `k` threads, n = base + i.
template <class Fn>
std::vector<std::unique_ptr<Stream>> run_streams(const Config& cfg, int k, int total, uint64_t base, Fn fn) {
  std::vector<std::unique_ptr<Stream>> ss;
  for (int t = 0; t < k; ++t) ss.push_back(std::make_unique<Stream>(static_cast<size_t>(cfg.payload)));
  std::atomic<int> next{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < k; ++t)
    ts.emplace_back([&, t] {
      for (int i; (i = next.fetch_add(1)) < total;) fn(base + static_cast<uint64_t>(i), *ss[static_cast<size_t>(t)]);
    });
  for (auto& t : ts) t.join();
  return ss;
}

struct Totals {
  uint64_t ok = 0, failed = 0, mismatches = 0;
  std::vector<uint64_t> hist;
};

Totals sum(const std::vector<std::unique_ptr<Stream>>& ss) {
  Totals t;
  t.hist.assign(Histogram::kBuckets, 0);
  std::vector<uint64_t> h;
  for (auto& s : ss) {
    t.ok += s->ok;
    t.failed += s->failed;
    t.mismatches += s->mismatches;
    s->hist.snapshot_into(h);
    for (size_t i = 0; i < h.size(); ++i) t.hist[i] += h[i];
  }
  return t;
}

// Holds H idle echo connections in a Worker thread until the destructor.
struct RealHold {
  Config cfg;
  Control ctl;
  std::unique_ptr<Worker> w;
  std::thread t;
  RealHold(const Config& base, int h) : cfg(base) {
    cfg.mode = Mode::idle;
    cfg.connections = h;
    cfg.threads = 1;
    ctl.t_start_ns = now_ns();
    w = std::make_unique<Worker>(cfg, ctl, 0u, h, false);
    t = std::thread([this] { w->run(); });
  }
  ~RealHold() {
    ctl.phase.store(kStop);
    t.join();
  }
  // Waits until every held connection was served or failed; false on a timeout.
  bool wait(int h) {
    const uint64_t end = now_ns() + static_cast<uint64_t>((h / cfg.rate + cfg.connect_timeout + 5) * 1e9);
    while (w->ready.load() + w->failed.load() < static_cast<uint64_t>(h)) {
      if (now_ns() > end) return false;
      usleep(20'000);
    }
    return true;
  }
};

// After the hold the server still has work of the ramp's making: held
// connections hibernating a second after their echo, the stacks they gave
// back being trimmed once the runtime is quiet. Counted in the cycles, that
// one-off work would look like a cost growing with H. Waits at least
// `min_s`, then until the server used no CPU over two successive 500 ms
// looks (10 ms ticks), at most 60 s. Returns the seconds waited.
double settle(long pid, double min_s) {
  const uint64_t t0 = now_ns();
  auto waited = [&] { return static_cast<double>(now_ns() - t0) / 1e9; };
  usleep(static_cast<useconds_t>(min_s * 1e6));
  if (!pid) return waited();
  ProcCpu last = read_proc_cpu(pid);
  for (int quiet = 0; quiet < 2 && waited() < 60;) {
    usleep(500'000);
    ProcCpu now = read_proc_cpu(pid);
    quiet = now.ok && last.ok && now.seconds == last.seconds ? quiet + 1 : 0;
    last = now;
  }
  return waited();
}

}  // namespace

int run_churn(const Config& cfg, const ChurnConfig& ch) {
  const long pid = cfg.server_pid;
  const long rss0 = pid ? read_proc_rss_kb(pid) : -1;
  std::unique_ptr<RealHold> real;
  uint64_t held = 0, hold_failed = 0;
  const uint64_t t_hold = now_ns();
  if (ch.hold > 0 && !ch.ghost) {
    real = std::make_unique<RealHold>(cfg, ch.hold);
    if (!real->wait(ch.hold)) std::fprintf(stderr, "connbench: the hold phase timed out\n");
    held = real->w->ready.load();
    hold_failed = static_cast<uint64_t>(ch.hold) - held;
    if (hold_failed) fail_with("held connections not served within --connect-timeout");
  } else if (ch.hold > 0) {
    Totals g = sum(run_streams(cfg, ch.concurrency, ch.hold, 1ull << 40,
                               [&](uint64_t n, Stream& s) { ghost(cfg, n, s); }));
    held = g.ok;
    hold_failed = g.failed + g.mismatches;
  }
  const double hold_s = static_cast<double>(now_ns() - t_hold) / 1e9;
  const double settle_s = settle(pid, ch.settle);
  const long server_conns = server_count(cfg);
  const long rss_held = pid ? read_proc_rss_kb(pid) : -1;
  std::fprintf(stderr, "connbench: holding %llu (%llu failed) after %.1fs, settled %.1fs; server counts %ld\n",
               static_cast<unsigned long long>(held), static_cast<unsigned long long>(hold_failed), hold_s,
               settle_s, server_conns);
  if (hold_failed) {
    std::fprintf(stderr, "connbench: %llu held connections failed (%s)%s\n",
                 static_cast<unsigned long long>(hold_failed), g_first_error.c_str(),
                 ch.ghost && server_conns < 0 ? "; ghosts need tools/connbench's churn_server" : "");
    return 1;
  }

  bool any_failed = false;
  for (int concurrent = 0; concurrent <= 1; ++concurrent) {
    const int k = concurrent ? ch.concurrency : 1;
    const ProcCpu c0 = pid ? read_proc_cpu(pid) : ProcCpu{};
    const uint64_t t0 = now_ns();
    Totals t = sum(run_streams(cfg, k, ch.cycles, static_cast<uint64_t>(concurrent + 1) << 32,
                               [&](uint64_t n, Stream& s) { cycle(cfg, n, s); }));
    const double wall = static_cast<double>(now_ns() - t0) / 1e9;
    const ProcCpu c1 = pid ? read_proc_cpu(pid) : ProcCpu{};
    const Percentiles p = percentiles(t.hist);
    char buf[768];
    int len = std::snprintf(
        buf, sizeof buf,
        "RESULT tool=connbench mode=churn run=%s hold_kind=%s held=%llu cycles=%d concurrency=%d payload=%d"
        " us_per_cycle=%.2f cycles_per_s=%.0f p50_us=%.1f p99_us=%.1f max_us=%.1f ok=%llu failed=%llu"
        " mismatches=%llu",
        concurrent ? "concurrent" : "sequential", ch.ghost ? "ghost" : "real", static_cast<unsigned long long>(held),
        ch.cycles, k, cfg.payload, wall * 1e6 / ch.cycles, ch.cycles / wall, p.p50_us, p.p99_us, p.max_us,
        static_cast<unsigned long long>(t.ok), static_cast<unsigned long long>(t.failed),
        static_cast<unsigned long long>(t.mismatches));
    if (c0.ok && c1.ok)
      len += std::snprintf(buf + len, sizeof buf - static_cast<size_t>(len),
                           " server_cpu_s=%.2f server_cpu_us_per_cycle=%.2f", c1.seconds - c0.seconds,
                           (c1.seconds - c0.seconds) * 1e6 / ch.cycles);
    std::snprintf(buf + len, sizeof buf - static_cast<size_t>(len),
                  " server_conns=%ld rss_held_kb=%ld rss_before_kb=%ld hold_s=%.1f settle_s=%.1f", server_conns,
                  rss_held, rss0, hold_s, settle_s);
    std::printf("%s\n", buf);
    std::fflush(stdout);
    if (t.failed || t.mismatches) {
      any_failed = true;
      std::fprintf(stderr, "connbench: %llu cycles failed, %llu mismatched (first error: %s)\n",
                   static_cast<unsigned long long>(t.failed), static_cast<unsigned long long>(t.mismatches),
                   g_first_error.c_str());
    }
  }
  return any_failed ? 1 : 0;
}

}  // namespace connbench
