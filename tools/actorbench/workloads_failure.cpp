// actorbench workloads of the failure-model layer: request/reply through a
// server (`call`) and a supervisor restarting a crashed child (`restart`).
#include "workloads.hpp"

#include <herd/actors.hpp>
#include <herd/actors/logger.hpp>
#include <herd/actors/server.hpp>
#include <herd/supervisors/supervisor.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace actorbench_failure_msgs {
struct request {
  uint64_t v;
};
struct started {
  herd::pid who;
};
struct crash {};
}  // namespace actorbench_failure_msgs

namespace actorbench {
namespace {

using clk = std::chrono::steady_clock;
using namespace actorbench_failure_msgs;

// ---- call: round trips of herd::call to a server that replies with the
// request (gen_server:call in the Erlang peer).
struct echo_server : herd::server<echo_server> {
  using calls = herd::types<request>;
  request handle_call(const request& r, const herd::from&) { return r; }
};

void call(const config& c) {
  uint64_t n = c.args.at(0);
  auto s = herd::start_server<echo_server>();
  uint64_t sum = 0;
  auto t0 = clk::now();
  for (uint64_t i = 0; i < n; ++i) sum += herd::call<request>(s, request{i}).v;
  double ns = std::chrono::duration<double, std::nano>(clk::now() - t0).count();
  (void)herd::stop_server(s);
  if (sum != n * (n - 1) / 2) {
    std::fprintf(stderr, "actorbench: call: wrong replies (sum %llu)\n", (unsigned long long)sum);
    std::exit(1);
  }
  std::printf("RESULT impl=herd workload=call %s calls=%llu ns_per_call=%.1f\n", common_keys(c).c_str(),
              (unsigned long long)n, ns / double(n));
}

// ---- restart: a one_for_one supervisor (intensity 100,010 in 1 s) restarts
// its one permanent child, which tells the benchmark it started and crashes
// (throws) when told to. Per restart: the time from the crash order to the
// new child's `started`. Crash reports stay on, written to a file.
double pct(const std::vector<double>& sorted, double p) {  // nearest rank, as the peers
  std::size_t n = sorted.size();
  auto k = static_cast<std::size_t>(std::ceil(p * double(n)));
  return sorted[std::min(n, std::max<std::size_t>(k, 1)) - 1];
}

void restart(const config& c) {
  namespace sup = herd::supervisor;
  uint64_t n = c.args.at(0);
  // The logger's sink is switched from outside the workers (blocking pool).
  std::string log_path = "/tmp/actorbench-restart-" + std::to_string(::getpid()) + ".log";
  if (!herd::blocking([&] { return herd::set_log_file(log_path); })) {
    std::fprintf(stderr, "actorbench: restart: cannot open %s\n", log_path.c_str());
    std::exit(1);
  }
  herd::logger_stats log0 = herd::log_stats();
  herd::pid me = herd::self();
  auto top = sup::start_link({.strategy = sup::one_for_one, .intensity = 100010, .period = std::chrono::seconds(1)},
                             {{.id = "child", .start = [me] {
                                 herd::send(me, started{herd::self()});
                                 herd::receive([](crash) { throw std::runtime_error("crash ordered"); });
                               }}});
  if (!top) {
    std::fprintf(stderr, "actorbench: restart: the supervisor did not start: %s\n", top.error().detail.c_str());
    std::exit(1);
  }
  herd::pid child = herd::receive([](started s) { return s.who; });
  std::vector<double> us;
  us.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    auto t0 = clk::now();
    herd::send(child, crash{});
    child = herd::receive([](started s) { return s.who; });
    us.push_back(std::chrono::duration<double, std::micro>(clk::now() - t0).count());
  }
  herd::unlink(*top);
  (void)sup::stop(*top);
  herd::blocking([] { herd::log_flush(); });
  herd::logger_stats log1 = herd::log_stats();
  herd::blocking([] { herd::set_log_stderr(); });
  ::unlink(log_path.c_str());
  std::sort(us.begin(), us.end());
  std::printf("RESULT impl=herd workload=restart %s restarts=%llu p50_us=%.1f p99_us=%.1f max_us=%.1f "
              "log_reports=%llu log_dropped=%llu\n",
              common_keys(c).c_str(), (unsigned long long)n, pct(us, 0.50), pct(us, 0.99), us.back(),
              (unsigned long long)(log1.reported - log0.reported), (unsigned long long)(log1.dropped - log0.dropped));
}

}  // namespace

bool run_failure_workload(const config& c) {
  if (c.workload == "call") call(c);
  else if (c.workload == "restart") restart(c);
  else return false;
  return true;
}

}  // namespace actorbench
