#include "cli.hpp"

#include <arpa/inet.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace connbench {

double parse_num(const std::string& opt, const char* v, double lo, double hi) {
  char* end = nullptr;
  errno = 0;
  double x = std::strtod(v, &end);
  if (errno || end == v || *end || !(x >= lo && x <= hi)) {
    char range[96];
    std::snprintf(range, sizeof range, " wants a number in [%g, %g], got '", lo, hi);
    usage_error(opt + range + v + "'");
  }
  return x;
}

int parse_int(const std::string& opt, const char* v, long lo, long hi) {
  double x = parse_num(opt, v, static_cast<double>(lo), static_cast<double>(hi));
  if (x != static_cast<double>(static_cast<long>(x))) usage_error(opt + " wants an integer, got '" + v + "'");
  return static_cast<int>(x);
}

std::vector<in_addr> loopback_sources(int k) {
  std::vector<in_addr> out;
  for (int i = 0; i < k; ++i) {
    in_addr a{};
    a.s_addr = htonl((127u << 24) | static_cast<uint32_t>(i + 1));
    out.push_back(a);
  }
  return out;
}

bool bind_source(int fd, const std::vector<in_addr>& sources, uint64_t n) {
  if (sources.empty()) return true;
  int one = 1;
  setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
  sockaddr_in src{};
  src.sin_family = AF_INET;
  src.sin_addr = sources[n % sources.size()];
  return bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) == 0;
}

void check_fd_limit(const char* prog, long need) {
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  if (static_cast<long>(rl.rlim_cur) >= need) return;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  if (static_cast<long>(rl.rlim_cur) >= need) return;
  std::fprintf(stderr,
               "%s: need %ld file descriptors but RLIMIT_NOFILE is %llu (hard %llu).\n"
               "  Raise it: `ulimit -n %ld` (the hard limit needs root or limits.conf, and must\n"
               "  stay below fs.nr_open = /proc/sys/fs/nr_open), or use fewer --connections.\n",
               prog, need, static_cast<unsigned long long>(rl.rlim_cur),
               static_cast<unsigned long long>(rl.rlim_max), need);
  std::exit(2);
}

}  // namespace connbench
