// The C1000K WebSocket simulation: N WebSocket sessions over in-memory
// transports (herd::net::memory_transport), each served by the code a TCP
// client gets — http::serve_connection reads the upgrade request, the
// router's upgrade route hands the transport to ws::serve, which answers 101
// and runs the connection, hibernating when idle. Every session joins one
// herd::pg room with a "join" text frame; one broadcast to the room must
// reach every client end (each client reads and checks its frame), while a
// probe session outside the room is pushed to every `probe_every` to measure
// a single user's push latency during the broadcast.
//
// Used by tools/c1000k (--ws, the million-session figures) and by the
// ws_c1000k_tests CTest case (10,000 sessions; 1,000 at small scale), which
// checks the counts this returns. Call from a process (the node's root);
// one run per node: the room's pg scope is "c1000k".
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <herd/actors/node.hpp>
#include <string>

namespace c1000k {

struct ws_room_config {
  std::size_t sessions = 100000;  // room members (the probe session comes on top)
  std::size_t warmup = 1000;      // of those, opened first and not in the RSS growth
  unsigned shards = 16;           // client processes, each holding sessions / shards client ends
  std::size_t window = 256;       // handshakes or joins in flight per shard
  std::chrono::milliseconds idle_hibernate{100};
  // Armed in every session (its cost is in the idle bytes); long enough not
  // to fire during a run: 1M sessions pinged every 25 s are 40,000 wake-ups
  // a second, a load of its own. Client ends answer pings with pongs.
  std::chrono::milliseconds ping_interval{std::chrono::minutes(10)};
  std::chrono::milliseconds probe_every{10};
  std::size_t idle_probes = 50;  // probe pushes before the broadcast (the idle baseline)
  // A second broadcast, paced: the driver sends to the members itself, this
  // many at a time, and yields between (0: no second broadcast). The first
  // is one pg::send to the whole room. 100 stays under half a worker's
  // 256-entry run ring (runtime/src/sched/tuning.hpp), so the members it
  // wakes never overflow into the global queue (see ws_room.cpp).
  std::size_t paced_chunk = 100;
  std::chrono::seconds stall{60};  // a phase that makes no progress this long fails
  bool measure_memory = true;      // settle and read RSS after each phase
  bool teardown = true;            // close every session and wait for them to end
};

struct latency {
  std::size_t count = 0;
  double p50_us = 0, p99_us = 0, max_us = 0;
};

struct ws_room_result {
  bool ok = false;
  std::string error;  // the first thing that went wrong

  std::size_t opened = 0;          // handshakes that answered 101 with the right accept key
  std::size_t joined = 0;          // "joined" frames read
  std::size_t broadcast_read = 0;  // room frames read and checked, once per client end
  std::size_t broadcast_sent = 0;  // pg::send's count (room members)
  double open_s = 0;               // the sessions after the warm-up, handshake included
  double join_s = 0;
  double broadcast_send_s = 0;  // pg::send returned
  double broadcast_all_s = 0;   // every client end had read its frame

  std::size_t paced_read = 0;  // the second broadcast's frames read and checked
  double paced_send_s = 0, paced_all_s = 0;

  std::size_t probe_sent = 0, probe_read = 0, probe_out_of_order = 0;
  latency probe_idle, probe_during;  // before the broadcast, and while it runs
  latency probe_paced;               // while the paced broadcast runs

  // Memory (measure_memory): RSS after the warm-up, after the sessions
  // opened and hibernated, after they joined the room, after the broadcast
  // settled, and the peak.
  long rss_warm = 0, rss_open = 0, rss_joined = 0, rss_after_broadcast = 0, rss_peak = 0;
  std::size_t client_bytes_per_session = 0;  // the simulated clients' bookkeeping, inside the RSS
  // The runtime's own accounting for a sample of hibernated session processes
  // (introspect::process_info: control block + stack pages + relations).
  double runtime_bytes_per_session = 0;
  std::size_t sampled = 0;
  std::size_t stacks_in_use_idle = 0;
};

// From a process (the node's root): runs the simulation on `node`.
ws_room_result run_ws_room(herd::node& node, const ws_room_config& cfg);

}  // namespace c1000k
