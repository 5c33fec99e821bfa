// overview and the metrics endpoint's text: runtime metrics (per worker), the
// rates of the last one-second interval (sampler), memory from the OS
// (/proc/self/statm) and from the allocator (mimalloc's process info; 0 under
// the sanitizers, where herd uses plain malloc), and long-running slices.
#include "views.hpp"

#include <herd/actors/introspect.hpp>
#include <herd/actors/node.hpp>
#include <herd/net/listener.hpp>
#include <herd/runtime/alloc.hpp>
#include <herd/runtime/clock.hpp>
#include <herd/runtime/runtime.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#ifndef HERD_VERSION
#define HERD_VERSION "unknown"
#endif

namespace herd::observer {
namespace {

uint64_t rss_bytes() {
  // Opened once and re-read: a node out of descriptors could not open it,
  // and that is when its memory matters.
  static int fd = -1;  // the observer's thread alone
  if (fd < 0) fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  char buf[128];
  ssize_t n = fd >= 0 ? ::pread(fd, buf, sizeof buf - 1, 0) : -1;
  if (n <= 0) return 0;
  buf[n] = 0;
  unsigned long long size = 0, resident = 0;
  if (std::sscanf(buf, "%llu %llu", &size, &resident) != 2) return 0;
  return resident * uint64_t(sysconf(_SC_PAGESIZE));
}

struct figures {
  rt::runtime_metrics m;
  rates r;
  std::size_t actors = 0;
  uint64_t rss = 0;
  alloc::heap_stats heap;
};

figures gather(const sampler& s) {
  figures f;
  rt::current_metrics(f.m);
  f.r = s.current(f.m.workers.size());
  f.actors = current_node_stats().live_processes;
  f.rss = rss_bytes();
  f.heap = alloc::stats();
  return f;
}

}  // namespace

json overview_view(const sampler& s) {
  figures f = gather(s);
  json out;
  out["node"] = {{"os_pid", int64_t(::getpid())},
                 {"uptime_ms", f.m.uptime_ms},
                 {"herd_version", HERD_VERSION},
                 {"workers", f.m.workers.size()}};
  out["actors"] = f.actors;
  out["memory"] = {{"rss_bytes", f.rss},
                   {"mimalloc_committed_bytes", f.heap.committed},
                   {"mimalloc_peak_committed_bytes", f.heap.peak_committed},
                   {"stacks_in_use", f.m.stacks_in_use},
                   {"stacks_carved", f.m.stacks_carved}};
  out["rates"] = {{"messages_per_s", f.r.messages_per_s},
                  {"switches_per_s", f.r.switches_per_s},
                  {"spawns_per_s", f.r.spawns_per_s}};
  json workers = json::array();
  for (std::size_t i = 0; i < f.m.workers.size(); ++i) {
    const auto& w = f.m.workers[i];
    workers.push_back({{"id", i},
                       {"utilization", f.r.utilization[i]},
                       {"run_queue", w.run_queue},
                       {"steals", w.steals},
                       {"parks", w.parks},
                       {"switches", w.switches},
                       {"timers", w.timers},
                       {"sends_batched", w.sends_batched},
                       {"send_flushes", w.send_flushes}});
  }
  out["workers"] = std::move(workers);
  std::vector<const void*> ids;
  for (auto& l : f.m.long_schedules) ids.push_back(l.fiber);
  std::vector<pid> pids = introspect::pids_of(ids);
  uint64_t now = rt::now_ms();
  json longs = json::array();
  for (std::size_t i = f.m.long_schedules.size(); i-- > 0;) {  // the most recent first
    const auto& l = f.m.long_schedules[i];
    longs.push_back({{"pid", pid_json(pids[i])},
                     {"duration_ms", l.duration_ms},
                     {"ago_ms", now > l.at_ms ? now - l.at_ms : 0}});
  }
  out["long_running"] = std::move(longs);
  return out;
}

std::string prometheus_text(const sampler& s) {
  figures f = gather(s);
  std::string out;
  char buf[256];
  auto metric = [&](const char* name, const char* type, const char* help) {
    std::snprintf(buf, sizeof buf, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
    out += buf;
  };
  auto value = [&](const char* name, const std::string& labels, double v) {
    std::snprintf(buf, sizeof buf, "%s%s %.17g\n", name, labels.c_str(), v);
    out += buf;
  };
  // A metric with one unlabelled value.
  auto single = [&](const char* name, const char* type, const char* help, double v) {
    metric(name, type, help);
    value(name, "", v);
  };
  single("herd_actors", "gauge", "Live processes.", double(f.actors));
  single("herd_uptime_seconds", "gauge", "Time since the runtime started.", double(f.m.uptime_ms) / 1000.0);
  single("herd_memory_rss_bytes", "gauge", "Resident set size (/proc/self/statm).", double(f.rss));
  single("herd_memory_mimalloc_committed_bytes", "gauge", "Memory committed by mimalloc (0: not in use).",
         double(f.heap.committed));
  single("herd_stacks_in_use", "gauge", "Actor stacks in use.", double(f.m.stacks_in_use));
  single("herd_stacks_carved", "gauge", "Actor stacks carved from the arena.", double(f.m.stacks_carved));
  single("herd_compact_slots", "gauge", "Shared slots compact processes run on (0: none spawned yet).",
         double(f.m.compact_slots));
  single("herd_compact_runs_total", "counter", "Times a compact process was given a slot to run on.",
         double(f.m.compact_runs));
  single("herd_compact_waits_total", "counter", "Times a compact process waited for its slot, held by another.",
         double(f.m.compact_waits));
  single("herd_messages_per_second", "gauge", "Messages and signals made per second (last 1 s sample).",
         f.r.messages_per_s);
  single("herd_switches_per_second", "gauge", "Context switches per second (last 1 s sample).", f.r.switches_per_s);
  single("herd_spawns_per_second", "gauge", "Processes spawned per second (last 1 s sample).", f.r.spawns_per_s);
  auto per_worker = [&](const char* name, const char* type, const char* help, auto get) {
    metric(name, type, help);
    for (std::size_t i = 0; i < f.m.workers.size(); ++i)
      value(name, "{worker=\"" + std::to_string(i) + "\"}", double(get(i)));
  };
  per_worker("herd_worker_utilization", "gauge", "Share of the last 1 s sample spent running actors.",
             [&](std::size_t i) { return f.r.utilization[i]; });
  per_worker("herd_worker_run_queue", "gauge", "Runnable actors queued on the worker.",
             [&](std::size_t i) { return f.m.workers[i].run_queue; });
  per_worker("herd_worker_steals_total", "counter", "Successful steals.",
             [&](std::size_t i) { return f.m.workers[i].steals; });
  per_worker("herd_worker_parks_total", "counter", "Times the worker parked.",
             [&](std::size_t i) { return f.m.workers[i].parks; });
  per_worker("herd_worker_switches_total", "counter", "Actors resumed.",
             [&](std::size_t i) { return f.m.workers[i].switches; });
  per_worker("herd_worker_sends_batched_total", "counter", "Socket sends queued on the worker's send ring.",
             [&](std::size_t i) { return f.m.workers[i].sends_batched; });
  per_worker("herd_worker_send_flushes_total", "counter", "io_uring_enter calls that took queued sends to the kernel.",
             [&](std::size_t i) { return f.m.workers[i].send_flushes; });
  auto ls = net::listeners();
  auto per_listener = [&](const char* name, const char* type, const char* help, auto get) {
    metric(name, type, help);
    for (auto& l : ls) {
      // Listener names are the application's: escape what the text format needs.
      std::string esc;
      for (char c : l.name) {
        if (c == '\\' || c == '"') esc += '\\';
        if (c == '\n') { esc += "\\n"; continue; }
        esc += c;
      }
      value(name, "{listener=\"" + esc + "\"}", double(get(l)));
    }
  };
  per_listener("herd_listener_connections", "gauge", "Open connections.",
               [](auto& l) { return l.connections; });
  per_listener("herd_listener_accepts_total", "counter", "Connections accepted.", [](auto& l) { return l.accepts; });
  per_listener("herd_listener_refusals_total", "counter", "Connections closed at once (could not be taken).",
               [](auto& l) { return l.refusals; });
  per_listener("herd_listener_emfile_backoffs_total", "counter",
               "100 ms accept pauses taken because the node was out of file descriptors.",
               [](auto& l) { return l.emfile_backoffs; });
  per_listener("herd_listener_drops_total", "counter",
               "Connection attempts the kernel dropped at the listening socket (backlog full).",
               [](auto& l) { return l.listen_drops; });
  return out;
}

}  // namespace herd::observer
