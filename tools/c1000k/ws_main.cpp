// c1000k --ws: the WebSocket mode (ws_room.hpp) — one size per run, because
// the program exits without tearing the sessions down (see ws_room.cpp).
//
//   c1000k --ws SESSIONS [--shards N] [--hibernate-ms MS] [--ping-s S] [--probe-ms MS] [--warmup N]
//               [--chunk N]   (the paced broadcast's chunk; 0: no paced broadcast)
//
// Prints three RESULT lines: the idle sessions (RSS growth per session, the
// clients' share of it, the runtime's own accounting, open rate), the room
// and its broadcast (pg's bytes per member, time until every client end read
// the frame, peak RSS; then the paced one's), and the probe's push latency
// alone, during the broadcast and during the paced one. Refuses (exit 2) a size the machine's memory cannot hold.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <herd/actors.hpp>
#include <herd/runtime/runtime.hpp>
#include <string>
#include <string_view>

#include "ws_room.hpp"

namespace {

int usage(const char* why) {
  std::fprintf(stderr,
               "c1000k --ws: %s\nusage: c1000k --ws SESSIONS [--shards N] [--hibernate-ms MS] [--ping-s S] "
               "[--probe-ms MS] [--warmup N] [--chunk N]\n",
               why);
  return 2;
}

bool number(const char* s, std::size_t& out) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (!s[0] || *end || s[0] == '-') return false;
  out = std::size_t(v);
  return true;
}

long mem_available_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  long kib = 0;
  std::string unit;
  while (f >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return -1;
}

}  // namespace

int ws_main(int argc, char** argv) {
  c1000k::ws_room_config cfg;
  cfg.sessions = 0;
  for (int i = 2; i < argc; ++i) {
    std::string_view a = argv[i];
    std::size_t v = 0;
    bool has_value = a.starts_with("--") && i + 1 < argc;
    if (!a.starts_with("--")) {
      if (!number(argv[i], cfg.sessions) || cfg.sessions == 0) return usage("SESSIONS must be a number > 0");
      continue;
    }
    if (!has_value || !number(argv[i + 1], v)) return usage("each option takes a number");
    ++i;
    if (a == "--shards" && v > 0)
      cfg.shards = unsigned(v);
    else if (a == "--hibernate-ms" && v > 0)
      cfg.idle_hibernate = std::chrono::milliseconds(v);
    else if (a == "--ping-s" && v > 0)
      cfg.ping_interval = std::chrono::seconds(v);
    else if (a == "--probe-ms" && v > 0)
      cfg.probe_every = std::chrono::milliseconds(v);
    else if (a == "--warmup")
      cfg.warmup = v;
    else if (a == "--chunk")
      cfg.paced_chunk = v;
    else
      return usage("unknown option or a value of 0");
  }
  if (cfg.sessions == 0) return usage("SESSIONS missing");
  // ~2.2 KB per idle session and a few KB per session woken at once
  // (measured: see docs/websocket.md); ask for 6 KiB each and 1 GiB.
  long avail = mem_available_bytes();
  long need = long(cfg.sessions) * 6144 + (1l << 30);
  if (avail >= 0 && avail < need) {
    std::fprintf(stderr, "c1000k --ws: %zu sessions need about %ld MiB; MemAvailable is %ld MiB\n", cfg.sessions,
                 need >> 20, avail >> 20);
    return 2;
  }
  cfg.teardown = false;
  herd::node_options no;
  no.workers = 2;
  no.quiet = true;
  no.max_actors = std::max<std::size_t>(no.max_actors, cfg.sessions + 8192);
  herd::node node(no);
  // vm.max_map_count too low for max_actors (kernels without
  // MADV_GUARD_INSTALL): the runtime says so and names the sysctl.
  for (const auto& w : node.runtime().startup_warnings()) std::fprintf(stderr, "%s\n", w.c_str());
  int rc = 1;
  node.run([&] {
    c1000k::ws_room_result r = c1000k::run_ws_room(node, cfg);
    if (!r.ok) {
      std::printf("FAILED c1000k_ws sessions=%zu error=\"%s\" opened=%zu joined=%zu broadcast_read=%zu\n", cfg.sessions,
                  r.error.c_str(), r.opened, r.joined, r.broadcast_read);
      std::fflush(stdout);
      std::_Exit(1);
    }
    const std::size_t measured = cfg.sessions - std::min(cfg.warmup, cfg.sessions / 2);
    const double per = double(r.rss_open - r.rss_warm) / double(measured);
    std::printf(
        "RESULT c1000k_ws sessions=%zu measured=%zu rss_growth_bytes=%ld bytes_per_idle_session=%.0f "
        "client_side_bytes=%zu server_bytes_per_idle_session=%.0f runtime_counted_bytes=%.0f sampled=%zu "
        "open_s=%.2f sessions_per_s=%.0f stacks_in_use=%zu\n",
        cfg.sessions, measured, r.rss_open - r.rss_warm, per, r.client_bytes_per_session,
        per - double(r.client_bytes_per_session), r.runtime_bytes_per_session, r.sampled, r.open_s,
        double(measured) / r.open_s, r.stacks_in_use_idle);
    std::printf(
        "RESULT c1000k_ws_room members=%zu joined=%zu join_s=%.2f pg_bytes_per_member=%.0f "
        "bytes_per_idle_member_session=%.0f broadcast_sent=%zu "
        "broadcast_read=%zu broadcast_send_s=%.3f broadcast_all_read_s=%.3f rss_after_broadcast_bytes=%ld "
        "peak_rss_bytes=%ld paced_chunk=%zu paced_read=%zu paced_send_s=%.3f paced_all_read_s=%.3f\n",
        cfg.sessions, r.joined, r.join_s, double(r.rss_joined - r.rss_open) / double(cfg.sessions),
        double(r.rss_joined - r.rss_warm) / double(measured), r.broadcast_sent, r.broadcast_read, r.broadcast_send_s,
        r.broadcast_all_s, r.rss_after_broadcast, r.rss_peak, cfg.paced_chunk, r.paced_read, r.paced_send_s,
        r.paced_all_s);
    std::printf(
        "RESULT c1000k_ws_probe every_ms=%lld idle_count=%zu idle_p50_us=%.0f idle_p99_us=%.0f idle_max_us=%.0f "
        "during_count=%zu during_p50_us=%.0f during_p99_us=%.0f during_max_us=%.0f paced_count=%zu "
        "paced_p50_us=%.0f paced_p99_us=%.0f paced_max_us=%.0f sent=%zu read=%zu out_of_order=%zu\n",
        (long long)cfg.probe_every.count(), r.probe_idle.count, r.probe_idle.p50_us, r.probe_idle.p99_us,
        r.probe_idle.max_us, r.probe_during.count, r.probe_during.p50_us, r.probe_during.p99_us, r.probe_during.max_us,
        r.probe_paced.count, r.probe_paced.p50_us, r.probe_paced.p99_us, r.probe_paced.max_us, r.probe_sent,
        r.probe_read, r.probe_out_of_order);
    std::fflush(stdout);
    // The sessions stay: the figures are printed, and a million sessions'
    // teardown is not what this run measures (ws_room.cpp, step 6).
    std::_Exit(0);
  });
  return rc;
}
