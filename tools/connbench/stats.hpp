// Latency histogram and /proc readers for connbench. No herd code.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace connbench {

// Log-bucketed histogram of nanoseconds: 128 linear sub-buckets per power of
// two, so any value is off by less than 1/128 (< 1%). Exactly one thread
// writes (the worker that owns the connections); the main thread reads it
// concurrently to take snapshots. Writes are a relaxed load+store rather than
// fetch_add: there is a single writer, so no lock prefix is needed on the
// per-round-trip path, and readers still see whole 64-bit values.
class Histogram {
 public:
  static constexpr int kSubBits = 7;
  static constexpr int kSub = 1 << kSubBits;
  static constexpr int kMaxExp = 44;  // values up to 2^44 ns (~4.9 hours)
  static constexpr int kBuckets = kSub + (kMaxExp - kSubBits + 1) * kSub;

  Histogram() : counts_(kBuckets) {}

  void record(uint64_t ns) {
    auto& c = counts_[index(ns)];
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // Copies the counts; subtracting two snapshots gives a window's histogram.
  void snapshot_into(std::vector<uint64_t>& out) const {
    out.resize(kBuckets);
    for (int i = 0; i < kBuckets; ++i) out[i] = counts_[i].load(std::memory_order_relaxed);
  }

  static int index(uint64_t v) {
    if (v < kSub) return static_cast<int>(v);
    int e = 63 - __builtin_clzll(v);
    if (e > kMaxExp) return kBuckets - 1;
    uint64_t m = v >> (e - kSubBits);  // in [kSub, 2*kSub)
    return kSub + (e - kSubBits) * kSub + static_cast<int>(m - kSub);
  }
  static uint64_t lowest(int idx) {
    if (idx < kSub) return static_cast<uint64_t>(idx);
    int e = (idx - kSub) / kSub + kSubBits;
    uint64_t m = static_cast<uint64_t>((idx - kSub) % kSub + kSub);
    return m << (e - kSubBits);
  }
  static uint64_t highest(int idx) { return idx + 1 < kBuckets ? lowest(idx + 1) - 1 : lowest(idx); }

 private:
  std::vector<std::atomic<uint64_t>> counts_;
};

// Percentiles over a plain count vector (a snapshot difference).
struct Percentiles {
  uint64_t count = 0;
  double p50_us = 0, p99_us = 0, p999_us = 0, max_us = 0;
};
Percentiles percentiles(const std::vector<uint64_t>& counts);

struct ProcCpu {
  bool ok = false;
  double seconds = 0;  // utime + stime of all threads
};
ProcCpu read_proc_cpu(long pid);
// VmRSS in KiB, or -1 when the process is gone.
long read_proc_rss_kb(long pid);

// TcpExt counters from /proc/net/netstat (namespace-wide, not per listener).
struct ListenCounters {
  bool ok = false;
  uint64_t overflows = 0, drops = 0;
};
ListenCounters read_listen_counters();

// The drops (sk_drops: SYNs and handshakes dropped, nearly always because
// the accept queue was full) of the TCP listening sockets on `port` (network
// byte order), IPv4 and IPv6, summed; from sock_diag, so only the server's
// own listener counts. -1 when sock_diag cannot be read.
long long read_port_listen_drops(uint16_t port_be);

double self_cpu_s();  // this process, user + system
uint64_t now_ns();    // CLOCK_MONOTONIC, comparable across processes on one host

}  // namespace connbench
