// pushbench: a load generator for push gateways (push gateway protocol v1;
// see README.md beside this file). No herd code: it measures herd's gateway
// and its Go and Node peers from the outside, the same way.
//
// Phases, one thread, one epoll instance:
//  1. connect: N WebSocket users u0..u(N-1) at --rate per second; a user
//     counts once its 101 (with the right Sec-WebSocket-Accept) has arrived.
//  2. idle: --idle-settle seconds with nothing but pings; the server's RSS
//     growth since before the first connect, / N, is bytes_per_idle_conn.
//  3. join: connection i sends `join r(i % rooms)` and waits for `ok join`.
//  4. push: K keep-alive HTTP connections POST /push/user/u<i> (round robin
//     over users) at --push-rate and /push/room/r<j> at --room-rate, each body
//     "U|R <pusher> <seq> <CLOCK_MONOTONIC ns> <padding>" with seq counted per
//     (pusher, target). Every received frame is checked for loss and order
//     per (connection, pusher) and its latency measured from the body's
//     timestamp, taken just before the POST is written. Warm-up, then the
//     measured window: the difference of two snapshots, the server's CPU
//     from /proc/PID/stat at the same instants.
//  5. drain: up to --drain seconds for every frame the server answered
//     `delivered` for; what never arrives is `lost`.
// With --storm N, users u0..u(N-1) drop and reconnect (rejoining their room)
// within --storm-window seconds, --storm-at seconds into the measured window:
// the storm's line says how many came back, how many were refused and how
// long it took, and stable_lost counts, by sequence number, frames that the
// connections up the whole run never got (the storm's own connections may
// lose a push handed to their old connection, as the protocol allows).
#include <arpa/inet.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "load.hpp"

using namespace pushbench;
using connbench::check_fd_limit;
using connbench::loopback_sources;
using connbench::now_ns;
using connbench::parse_int;
using connbench::parse_num;
using connbench::usage_error;

[[noreturn]] void connbench::usage_error(const std::string& msg) {
  std::fprintf(stderr,
               "pushbench: %s\n"
               "usage: pushbench --port P [--host 127.0.0.1] [--connections N] [--rooms R]\n"
               "       [--push-rate PER_S] [--room-rate PER_S] [--pushers K] [--pipeline D]\n"
               "       [--payload BYTES] [--push-tick-us US] [--busy-poll 0|1] [--duration S] [--warmup S] [--idle-settle S] [--rate CONNECTS_PER_S]\n"
               "       [--connect-timeout S] [--drain S] [--server-pid PID] [--sources K]\n"
               "       [--storm N] [--storm-at S] [--storm-window S] [--trace FILE]\n",
               msg.c_str());
  std::exit(2);
}

namespace {

Config parse(int argc, char** argv) {
  Config c;
  std::string host = "127.0.0.1";
  int port = -1, sources = 0;
  for (int i = 1; i < argc; ++i) {
    std::string o = argv[i];
    if (o == "--help" || o == "-h") {
      std::printf("see tools/pushbench/README.md\n");
      std::exit(0);
    }
    if (i + 1 >= argc) usage_error("missing value for " + o);
    const char* v = argv[++i];
    if (o == "--host") host = v;
    else if (o == "--port") port = parse_int(o, v, 1, 65535);
    else if (o == "--connections") c.connections = parse_int(o, v, 1, 1'000'000);
    else if (o == "--rooms") c.rooms = parse_int(o, v, 0, 1'000'000);
    else if (o == "--push-rate") c.push_rate = parse_num(o, v, 0, 1e7);
    else if (o == "--room-rate") c.room_rate = parse_num(o, v, 0, 1e7);
    else if (o == "--pushers") c.pushers = parse_int(o, v, 1, kMaxPushers);
    else if (o == "--pipeline") c.pipeline = parse_int(o, v, 1, 4096);
    else if (o == "--payload") c.payload = parse_int(o, v, 1, 60'000);
    else if (o == "--busy-poll") c.busy_poll = parse_int(o, v, 0, 1) != 0;
    else if (o == "--push-tick-us") c.push_tick_us = parse_int(o, v, 0, 1'000'000);
    else if (o == "--duration") c.duration = parse_num(o, v, 0.1, 3600);
    else if (o == "--warmup") c.warmup = parse_num(o, v, 0, 3600);
    else if (o == "--idle-settle") c.idle_settle = parse_num(o, v, 0, 3600);
    else if (o == "--rate") c.rate = parse_num(o, v, 1, 1e7);
    else if (o == "--connect-timeout") c.connect_timeout = parse_num(o, v, 0.1, 3600);
    else if (o == "--drain") c.drain = parse_num(o, v, 0, 3600);
    else if (o == "--server-pid") c.server_pid = parse_int(o, v, 1, 1L << 30);
    else if (o == "--sources") sources = parse_int(o, v, 1, 254);
    else if (o == "--storm") c.storm = parse_int(o, v, 0, 1'000'000);
    else if (o == "--storm-at") c.storm_at = parse_num(o, v, 0, 3600);
    else if (o == "--storm-window") c.storm_window = parse_num(o, v, 0.001, 3600);
    else if (o == "--trace") c.trace = v;
    else usage_error("unknown option " + o);
  }
  if (port < 0) usage_error("--port is required");
  if (c.storm > c.connections) usage_error("--storm N wants N <= --connections");
  if (c.storm > 0 && c.storm_at >= c.duration) usage_error("--storm-at must fall inside --duration");
  if (c.room_rate > 0 && c.rooms == 0) usage_error("--room-rate needs --rooms R");
  c.dst.sin_family = AF_INET;
  c.dst.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &c.dst.sin_addr) != 1)
    usage_error("--host wants a numeric IPv4 address, got '" + host + "'");
  if ((ntohl(c.dst.sin_addr.s_addr) >> 24) != 127) usage_error("--host must be a loopback address (127.x.x.x)");
  c.sources = loopback_sources(sources);
  return c;
}

struct Snap {
  uint64_t t = 0;
  Counters c;
  std::vector<uint64_t> hist;
  std::vector<uint64_t> room_hist;  // room frames only
  double server_cpu = 0, self_cpu = 0;
  double server_user = 0, server_sys = 0;  // the split of server_cpu (utime, stime)
  bool server_ok = false;
};

// utime and stime of /proc/PID/stat (fields 14 and 15) in seconds, apart:
// on loopback "system" also holds the client's receive path, which the
// kernel runs in the sender's context — the same for every server.
bool read_user_sys(long pid, double& user, double& sys) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s;
  if (!std::getline(f, s)) return false;
  auto close = s.rfind(')');
  if (close == std::string::npos) return false;
  unsigned long long ut = 0, st = 0;
  // After ") " come field 3 (state) ... field 13, then utime and stime.
  if (std::sscanf(s.c_str() + close + 2, "%*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu %llu", &ut, &st) != 2)
    return false;
  const double tck = static_cast<double>(sysconf(_SC_CLK_TCK));
  user = static_cast<double>(ut) / tck;
  sys = static_cast<double>(st) / tck;
  return true;
}

Snap snap(const Load& l, long pid) {
  Snap s;
  s.t = now_ns();
  s.c = l.counters();
  l.latency().snapshot_into(s.hist);
  l.room_latency().snapshot_into(s.room_hist);
  s.self_cpu = connbench::self_cpu_s();
  if (pid) {
    connbench::ProcCpu c = connbench::read_proc_cpu(pid);
    s.server_ok = c.ok;
    s.server_cpu = c.seconds;
    s.server_ok = s.server_ok && read_user_sys(pid, s.server_user, s.server_sys);
  }
  return s;
}

std::vector<uint64_t> diff(const std::vector<uint64_t>& b, const std::vector<uint64_t>& a) {
  std::vector<uint64_t> d(b.size());
  for (size_t i = 0; i < b.size(); ++i) d[i] = b[i] - a[i];
  return d;
}

double secs(uint64_t ns) { return static_cast<double>(ns) / 1e9; }

// Runs the loop for up to `seconds`, a progress line on stderr every second;
// returns early (true) once done() holds.
template <class Done>
bool run_for(Load& l, double seconds, const char* phase, Snap& last, uint64_t t0, Done done) {
  const uint64_t end = now_ns() + static_cast<uint64_t>(seconds * 1e9);
  while (now_ns() < end) {
    if (done()) return true;
    l.step(1);
    if (now_ns() - last.t >= 1'000'000'000) {
      Snap s = snap(l, 0);
      const double dt = secs(s.t - last.t);
      const auto p = connbench::percentiles(diff(s.hist, last.hist));
      const auto& c = s.c;
      std::fprintf(stderr,
                   "[%6.1fs %-7s] upgraded=%llu failed=%llu joined=%llu pushes/s=%.0f frames/s=%.0f p99=%.0fus "
                   "lost_gaps=%llu out_of_order=%llu disconnects=%llu\n",
                   secs(s.t - t0), phase, (unsigned long long)c.upgraded, (unsigned long long)c.failed,
                   (unsigned long long)c.joined, static_cast<double>(c.push_replies - last.c.push_replies) / dt,
                   static_cast<double>(c.frames - last.c.frames) / dt, p.p99_us, (unsigned long long)c.lost_gaps,
                   (unsigned long long)c.out_of_order, (unsigned long long)c.disconnects);
      last = std::move(s);
    }
  }
  return done();
}

}  // namespace

int run(const Config& cfg);

int main(int argc, char** argv) {
  const Config cfg = parse(argc, argv);
  try {
    return run(cfg);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pushbench: %s\n", e.what());
    return 1;
  }
}

int run(const Config& cfg) {
  signal(SIGPIPE, SIG_IGN);
  check_fd_limit("pushbench", cfg.connections + cfg.pushers + 64L);
  if (cfg.server_pid && connbench::read_proc_rss_kb(cfg.server_pid) < 0) usage_error("--server-pid: no such process");

  Load l(cfg);
  const uint64_t t0 = now_ns();
  const long rss_before = cfg.server_pid ? connbench::read_proc_rss_kb(cfg.server_pid) : -1;
  Snap last = snap(l, 0);
  const auto N = static_cast<uint64_t>(cfg.connections);

  const double ramp_limit = static_cast<double>(N) / cfg.rate + cfg.connect_timeout + 5;
  const bool ramp_complete =
      run_for(l, ramp_limit, "connect", last, t0, [&] { return l.counters().upgraded + l.counters().failed >= N; });
  const double ramp_s = secs((l.last_upgrade_ns() ? l.last_upgrade_ns() : now_ns()) - t0);
  const uint64_t upgraded = l.counters().upgraded;

  run_for(l, cfg.idle_settle, "idle", last, t0, [] { return false; });
  const long rss_idle = cfg.server_pid ? connbench::read_proc_rss_kb(cfg.server_pid) : -1;

  bool joins_complete = true;
  if (cfg.rooms > 0) {
    l.start_joins();
    joins_complete = run_for(l, cfg.connect_timeout + 10, "join", last, t0, [&] {
      const auto& c = l.counters();
      return c.joined + c.disconnects >= c.upgraded;
    });
  }

  l.start_pushing();
  run_for(l, cfg.warmup, "warmup", last, t0, [] { return false; });
  const Snap a = snap(l, cfg.server_pid);
  Snap calm;  // with a storm: the window up to its start, pushes only
  if (cfg.storm > 0) {
    run_for(l, cfg.storm_at, "measure", last, t0, [] { return false; });
    calm = snap(l, cfg.server_pid);
    l.start_storm();
    run_for(l, cfg.duration - cfg.storm_at, "storm", last, t0, [] { return false; });
  } else {
    run_for(l, cfg.duration, "measure", last, t0, [] { return false; });
  }
  const Snap b = snap(l, cfg.server_pid);
  const long rss_end = cfg.server_pid ? connbench::read_proc_rss_kb(cfg.server_pid) : -1;
  l.stop_pushing();
  // With a storm, `expected` counts pushes handed to connections the storm
  // dropped: wait for the storm to end and for what the stable ones are owed.
  const bool drained = run_for(l, cfg.drain + (cfg.storm > 0 ? cfg.connect_timeout : 0), "drain", last, t0, [&] {
    const auto& c = l.counters();
    if (c.push_replies + c.push_errors < c.pushes_sent) return false;
    if (cfg.storm > 0) return l.storm_over() && l.stable_loss().lost == 0;
    return c.frames >= c.expected;
  });
  const Counters& f = l.counters();

  const double window = secs(b.t - a.t);
  const auto p = connbench::percentiles(diff(b.hist, a.hist));
  const double frames = static_cast<double>(b.c.frames - a.c.frames);
  auto ull = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  std::string out = "RESULT tool=pushbench";
  char buf[512];
  auto add = [&](const char* fmt, auto... v) {
    std::snprintf(buf, sizeof buf, fmt, v...);
    out += buf;
  };
  add(" connections=%d rooms=%d push_rate=%.0f room_rate=%.0f payload=%d pushers=%d push_tick_us=%d busy_poll=%d duration_s=%.1f",
      cfg.connections, cfg.rooms, cfg.push_rate, cfg.room_rate, cfg.payload, cfg.pushers, cfg.push_tick_us, cfg.busy_poll ? 1 : 0,
      cfg.duration);
  add(" connected=%llu failed=%llu joined=%llu connect_ramp_s=%.3f ramp_complete=%d joins_complete=%d",
      ull(upgraded), ull(f.failed), ull(f.joined), ramp_s, ramp_complete ? 1 : 0, joins_complete ? 1 : 0);
  add(" pushes_per_s=%.0f frames_per_s=%.0f p50_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f",
      static_cast<double>(b.c.push_replies - a.c.push_replies) / window, frames / window, p.p50_us, p.p99_us,
      p.p999_us, p.max_us);
  {
    // Room frames apart: a room push hands one frame to every member, one
    // after the other, so its frames wait for the fan-out; user frames = all - room.
    std::vector<uint64_t> all = diff(b.hist, a.hist), room = diff(b.room_hist, a.room_hist), user = all;
    for (std::size_t i = 0; i < user.size() && i < room.size(); ++i) user[i] -= std::min(user[i], room[i]);
    const auto pu = connbench::percentiles(user), pr = connbench::percentiles(room);
    add(" user_p50_us=%.1f user_p99_us=%.1f room_p50_us=%.1f room_p99_us=%.1f", pu.p50_us, pu.p99_us, pr.p50_us,
        pr.p99_us);
  }
  add(" pushes=%llu expected=%llu frames=%llu lost=%llu lost_gaps=%llu out_of_order=%llu drained=%d",
      ull(f.pushes_sent), ull(f.expected), ull(f.frames), ull(f.expected > f.frames ? f.expected - f.frames : 0),
      ull(f.lost_gaps), ull(f.out_of_order), drained ? 1 : 0);
  add(" push_errors=%llu push_late=%llu bad_frames=%llu error_replies=%llu disconnects=%llu closes_1008=%llu"
      " closes_other=%llu pings=%llu",
      ull(f.push_errors), ull(f.push_late), ull(f.bad_frames), ull(f.error_replies), ull(f.disconnects),
      ull(f.closes_1008), ull(f.closes_other), ull(f.pings));
  if (cfg.storm > 0) {
    const StableLoss sl = l.stable_loss();
    const uint64_t back_ns = l.storm_last_back_ns() > l.storm_start_ns() ? l.storm_last_back_ns() - l.storm_start_ns() : 0;
    add(" storm=%d storm_window_s=%.3f storm_dropped=%llu storm_back=%llu storm_refused=%llu storm_complete=%d"
        " storm_back_ms=%.1f storm_gaps=%llu storm_out_of_order=%llu stable_connections=%llu stable_lost=%llu",
        cfg.storm, cfg.storm_window, ull(f.storm_dropped), ull(f.storm_back), ull(f.storm_refused),
        l.storm_over() ? 1 : 0, static_cast<double>(back_ns) / 1e6, ull(f.storm_gaps), ull(f.storm_out_of_order),
        ull(sl.connections), ull(sl.lost));
  }
  if (cfg.server_pid && rss_before >= 0 && rss_idle >= 0 && upgraded > 0)
    add(" rss_before_kb=%ld rss_idle_kb=%ld bytes_per_idle_conn=%.0f", rss_before, rss_idle,
        static_cast<double>(rss_idle - rss_before) * 1024.0 / static_cast<double>(upgraded));
  if (cfg.server_pid && a.server_ok && b.server_ok) {
    const double cpu = b.server_cpu - a.server_cpu;
    add(" rss_kb=%ld server_cpu_s=%.3f cpu_us_per_push=%.3f", rss_end, cpu, frames > 0 ? cpu * 1e6 / frames : 0.0);
    const double us = b.server_user - a.server_user, sy = b.server_sys - a.server_sys;
    add(" server_user_s=%.3f server_sys_s=%.3f user_us_per_push=%.3f sys_us_per_push=%.3f", us, sy,
        frames > 0 ? us * 1e6 / frames : 0.0, frames > 0 ? sy * 1e6 / frames : 0.0);
  }
  if (cfg.storm > 0 && cfg.server_pid && a.server_ok && calm.server_ok && b.server_ok) {
    // The window's CPU holds the reconnects too: per push before the storm,
    // and what the storm's part of the window cost the server in all.
    const double fr = static_cast<double>(calm.c.frames - a.c.frames);
    auto per = [&](double s) { return fr > 0 ? s * 1e6 / fr : 0.0; };
    add(" calm_window_s=%.3f calm_frames=%.0f calm_cpu_us_per_push=%.3f calm_user_us_per_push=%.3f"
        " calm_sys_us_per_push=%.3f storm_phase_cpu_s=%.3f storm_phase_frames=%.0f",
        secs(calm.t - a.t), fr, per(calm.server_cpu - a.server_cpu), per(calm.server_user - a.server_user),
        per(calm.server_sys - a.server_sys), b.server_cpu - calm.server_cpu,
        static_cast<double>(b.c.frames - calm.c.frames));
  }
  add(" client_cpu_s=%.2f", b.self_cpu - a.self_cpu);
  if (!cfg.trace.empty()) {
    // One row per push frame: ms since the measured window started (negative:
    // warm-up), latency in µs, U (user) or R (room).
    std::FILE* tf = std::fopen(cfg.trace.c_str(), "w");
    if (!tf) usage_error("--trace: cannot write " + cfg.trace);
    std::fprintf(tf, "# window_ms=%.3f start_ns=%llu (CLOCK_MONOTONIC)\n", static_cast<double>(b.t - a.t) / 1e6,
                 static_cast<unsigned long long>(a.t));
    for (const auto& r : l.trace())
      std::fprintf(tf, "%.3f %.1f %c\n", (static_cast<double>(r.at) - static_cast<double>(a.t)) / 1e6,
                   static_cast<double>(r.latency) / 1e3, r.kind);
    std::fclose(tf);
  }
  std::printf("%s\n", out.c_str());
  std::fflush(stdout);
  return 0;
}
