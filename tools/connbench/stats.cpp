#include "stats.hpp"

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace connbench {

Percentiles percentiles(const std::vector<uint64_t>& counts) {
  Percentiles p;
  for (uint64_t c : counts) p.count += c;
  if (p.count == 0) return p;
  // Report each bucket's midpoint: the true value is within half a bucket
  // width (< 0.4%) of it.
  auto mid_us = [](int i) {
    return (static_cast<double>(Histogram::lowest(i)) + static_cast<double>(Histogram::highest(i))) /
           2.0 / 1000.0;
  };
  const double targets[3] = {0.50, 0.99, 0.999};
  double* outs[3] = {&p.p50_us, &p.p99_us, &p.p999_us};
  int t = 0;
  uint64_t seen = 0;
  for (size_t i = 0; i < counts.size() && t < 3; ++i) {
    seen += counts[i];
    while (t < 3 && counts[i] && static_cast<double>(seen) >= targets[t] * static_cast<double>(p.count)) {
      *outs[t++] = mid_us(static_cast<int>(i));
    }
  }
  for (size_t i = counts.size(); i-- > 0;) {
    if (counts[i]) {
      p.max_us = static_cast<double>(Histogram::highest(static_cast<int>(i))) / 1000.0;
      break;
    }
  }
  return p;
}

ProcCpu read_proc_cpu(long pid) {
  ProcCpu r;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  std::ifstream f(path);
  std::string s;
  if (!std::getline(f, s)) return r;
  // The command name may contain spaces and parentheses: fields resume after
  // the last ')'. utime and stime are fields 14 and 15 (1-based).
  auto close = s.rfind(')');
  if (close == std::string::npos) return r;
  std::istringstream in(s.substr(close + 2));
  std::string tok;
  unsigned long long utime = 0, stime = 0;
  for (int field = 3; in >> tok; ++field) {
    if (field == 14) utime = std::stoull(tok);
    if (field == 15) {
      stime = std::stoull(tok);
      r.ok = true;
      break;
    }
  }
  r.seconds = static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  return r;
}

long read_proc_rss_kb(long pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%ld/status", pid);
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

ListenCounters read_listen_counters() {
  ListenCounters r;
  std::ifstream f("/proc/net/netstat");
  std::string names, values;
  // The file is pairs of lines: "TcpExt: Name1 Name2 ..." then "TcpExt: v1 v2 ...".
  while (std::getline(f, names) && std::getline(f, values)) {
    if (names.rfind("TcpExt:", 0) != 0) continue;
    std::istringstream n(names), v(values);
    std::string name, value;
    while (n >> name && v >> value) {
      if (name == "ListenOverflows") r.overflows = std::stoull(value), r.ok = true;
      if (name == "ListenDrops") r.drops = std::stoull(value);
    }
  }
  return r;
}

namespace {

// One SOCK_DIAG_BY_FAMILY dump of the listening TCP sockets of `family`,
// asking for their memory counters; adds the drops of those on `port_be`.
bool add_listen_drops(int nl, uint8_t family, uint16_t port_be, long long& sum) {
  struct {
    nlmsghdr nlh;
    inet_diag_req_v2 r;
  } req{};
  req.nlh.nlmsg_len = sizeof req;
  req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  req.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  req.r.sdiag_family = family;
  req.r.sdiag_protocol = IPPROTO_TCP;
  req.r.idiag_states = 1u << TCP_LISTEN;
  req.r.idiag_ext = 1u << (INET_DIAG_SKMEMINFO - 1);
  if (send(nl, &req, sizeof req, 0) != static_cast<ssize_t>(sizeof req)) return false;
  alignas(nlmsghdr) char buf[16384];
  for (;;) {
    ssize_t n = recv(nl, buf, sizeof buf, 0);
    if (n <= 0) return false;
    auto len = static_cast<unsigned>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
      if (h->nlmsg_type == NLMSG_DONE) return true;
      if (h->nlmsg_type == NLMSG_ERROR) return false;
      auto* m = static_cast<inet_diag_msg*>(NLMSG_DATA(h));
      if (m->id.idiag_sport != port_be) continue;
      unsigned alen = h->nlmsg_len - NLMSG_LENGTH(sizeof *m);
      for (auto* a = reinterpret_cast<rtattr*>(m + 1); RTA_OK(a, alen); a = RTA_NEXT(a, alen))
        if (a->rta_type == INET_DIAG_SKMEMINFO && RTA_PAYLOAD(a) > SK_MEMINFO_DROPS * sizeof(uint32_t))
          sum += static_cast<const uint32_t*>(RTA_DATA(a))[SK_MEMINFO_DROPS];
    }
  }
}

}  // namespace

long long read_port_listen_drops(uint16_t port_be) {
  int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (nl < 0) return -1;
  long long sum = 0;
  bool ok = add_listen_drops(nl, AF_INET, port_be, sum) && add_listen_drops(nl, AF_INET6, port_be, sum);
  close(nl);
  return ok ? sum : -1;
}

double self_cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace connbench
