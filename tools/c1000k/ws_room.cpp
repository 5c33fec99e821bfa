// The driver of the C1000K WebSocket run (ws_room.hpp). Phases, each one
// waited for by the shards' reports (never by a sleep), each bounded by
// cfg.stall without progress:
//   1. warm-up: `warmup` sessions opened (pools, arenas and the process
//      table's pages filled), then the RSS baseline;
//   2. open: the rest, each an upgrade request and a checked 101; the
//      sessions hibernate; RSS again (bytes per idle session);
//   3. join: every session sends "join" and reads "joined" (pg::join in the
//      session's process); RSS again (the room's cost per member);
//   4. the probe's idle baseline: idle_probes pushes, one every probe_every;
//   5. the broadcast: the probe pushes on, the driver sends one room_push to
//      the room (pg::send), every client end reads it (shards report), the
//      probe stops; then the peak RSS.
//   6. teardown (cfg.teardown): the shards close their ends, the sessions
//      end. Without it the caller exits the program, which the 1,000,000
//      run does: its teardown is not what it measures.
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <herd/actors/introspect.hpp>
#include <herd/actors/links.hpp>
#include <herd/actors/process.hpp>
#include <herd/actors/receive.hpp>
#include <herd/actors/timers.hpp>
#include <herd/runtime/runtime.hpp>
#include <herd/tables/pg.hpp>

#include "ws_room_parts.hpp"

namespace c1000k {

using namespace detail;

namespace {

long rss_bytes() {
  std::ifstream f("/proc/self/statm");
  long size = 0, resident = 0;
  f >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

long peak_rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6)) * 1024;
  return 0;
}

double seconds_since(clock::time_point t0) { return std::chrono::duration<double>(clock::now() - t0).count(); }

class driver {
 public:
  driver(herd::node& n, const ws_room_config& c) : node_(n), cfg_(c) {}

  ws_room_result run() {
    srv_ = make_server(cfg_);
    handler_ = session_handler(*srv_);
    start_shards();
    if (phases()) r_.ok = true;
    teardown();
    return r_;
  }

 private:
  void start_shards() {
    const std::size_t n = cfg_.sessions, s = cfg_.shards;
    uint64_t first = 0;
    for (unsigned i = 0; i < s; ++i) {
      std::size_t cap = n / s + (i < n % s ? 1 : 0);
      shard_config c{i, first, cap, cfg_.window, cfg_.stall, handler_, herd::self()};
      first += cap;
      capacity_.push_back(cap);
      // Linked: if the driver fails, the shards end, their ends close and
      // every session ends with them.
      shards_.push_back(herd::spawn_link([c = std::move(c)]() mutable { run_shard(std::move(c)); }));
    }
    probe_config pc{first, cfg_.probe_every, cfg_.stall, handler_, herd::self()};
    probe_ = herd::spawn_link([pc = std::move(pc)]() mutable { run_probe(std::move(pc)); });
  }

  bool phases() {
    if (!probe_wait(-1)) return false;
    // 1. warm-up
    const std::size_t s = shards_.size();
    std::vector<std::size_t> warm(s);
    for (std::size_t i = 0; i < s; ++i)
      warm[i] = std::min(capacity_[i], cfg_.warmup / s + (i < cfg_.warmup % s ? 1 : 0));
    if (!open_to(warm)) return false;
    settle();
    r_.rss_warm = rss_bytes();
    // 2. open
    auto t0 = clock::now();
    if (!open_to(capacity_)) return false;
    r_.open_s = seconds_since(t0);
    settle();
    r_.rss_open = rss_bytes();
    r_.stacks_in_use_idle = node_.runtime().metrics().stacks_in_use;
    runtime_accounting();
    // 3. join
    t0 = clock::now();
    for (herd::pid p : shards_) herd::send(p, shard_join{});
    if (!wait_shards(shard_report::joined, s, nullptr)) return false;
    r_.join_s = seconds_since(t0);
    settle();
    r_.rss_joined = rss_bytes();
    // 4. the probe alone
    herd::send(probe_, probe_run{0, std::max<std::size_t>(cfg_.idle_probes, 1)});
    if (!probe_wait(0)) return false;
    // 5. the broadcasts, with the probe
    if (!broadcast(1, 0, r_.broadcast_sent, r_.broadcast_send_s, r_.broadcast_all_s)) return false;
    r_.broadcast_read = room_read_last_;
    settle();
    r_.rss_after_broadcast = rss_bytes();
    r_.rss_peak = peak_rss_bytes();
    if (cfg_.paced_chunk == 0) return true;
    std::size_t sent = 0;
    if (!broadcast(2, cfg_.paced_chunk, sent, r_.paced_send_s, r_.paced_all_s)) return false;
    r_.paced_read = room_read_last_;
    return true;
  }

  // One room frame to every member while the probe pushes: with chunk 0 one
  // pg::send (the sender yields only when its reduction budget runs out, so
  // the woken members overflow the run queue into the global one, where a
  // push to anyone else waits behind them); else `chunk` sends at a time
  // with a yield between, which puts the sender behind the members it just
  // woke and keeps the queues short.
  bool broadcast(int round, std::size_t chunk, std::size_t& sent, double& send_s, double& all_s) {
    auto text = std::make_shared<const std::string>("room broadcast " + std::to_string(round) +
                                                    ": one frame to every member of the room");
    for (herd::pid p : shards_) herd::send(p, shard_expect_room{round, text});
    herd::send(probe_, probe_run{round, 0});
    auto t0 = clock::now();
    if (chunk == 0) {
      sent = herd::pg::send(pg_scope, room_name, room_push{text});
    } else {
      herd::pg::members m = herd::pg::get_members(pg_scope, room_name);
      for (std::size_t i = 0; i < m.size(); ++i) {
        herd::send(m[i], room_push{text});
        if ((i + 1) % chunk == 0) herd::yield();
      }
      sent = m.size();
    }
    send_s = seconds_since(t0);
    clock::time_point last{};
    room_read_last_ = 0;
    if (!wait_shards(shard_report::room_done, shards_.size(), &last)) return false;
    all_s = std::chrono::duration<double>(last - t0).count();
    herd::send(probe_, probe_stop{false});
    return probe_wait(round);
  }

  bool open_to(const std::vector<std::size_t>& target) {
    std::size_t expect = 0;
    for (std::size_t i = 0; i < shards_.size(); ++i) {
      if (target[i] <= opened_[i]) continue;
      herd::send(shards_[i], shard_open{target[i]});
      opened_[i] = target[i];
      ++expect;
    }
    return wait_shards(shard_report::opened, expect, nullptr);
  }

  // Waits for `count` reports of `kind`; a failure ends the run. A shard
  // reports a phase when it is done, which at a million sessions takes
  // minutes: each shard fails itself after cfg.stall without progress, and
  // this bound (the stall plus 1 ms per session) only catches a shard gone
  // silent.
  bool wait_shards(shard_report::kind_t kind, std::size_t count, clock::time_point* last) {
    const auto limit = cfg_.stall + std::chrono::milliseconds(cfg_.sessions);
    for (std::size_t got = 0; got < count;) {
      std::optional<shard_report> rep =
          herd::receive([](shard_report& m) { return std::optional<shard_report>(std::move(m)); },
                        [&](const probe_report& p) {
                          if (p.phase == -2) r_.error = p.error;  // the probe failed
                          return std::optional<shard_report>();
                        },
                        herd::after(limit, [] { return std::optional<shard_report>(); }));
      if (!r_.error.empty()) return false;
      if (!rep) return fail("no shard report within the stall time + 1 ms per session");
      if (rep->kind == shard_report::failed) return fail(rep->error);
      if (rep->kind != kind) return fail("a shard report out of order");
      ++got;
      if (kind == shard_report::opened) r_.opened += rep->count - reported_open_[rep->shard];
      if (kind == shard_report::opened) reported_open_[rep->shard] = rep->count;
      if (kind == shard_report::joined) r_.joined += rep->count;
      if (kind == shard_report::room_done) room_read_last_ += rep->count;
      sample_.insert(sample_.end(), rep->sample.begin(), rep->sample.end());
      if (last) *last = std::max(*last, rep->at);
    }
    return true;
  }

  bool probe_wait(int phase) {
    std::optional<probe_report> rep =
        herd::receive([](probe_report& m) { return std::optional<probe_report>(std::move(m)); },
                      [&](const shard_report& s) {
                        if (s.kind == shard_report::failed) r_.error = s.error;
                        return std::optional<probe_report>();
                      },
                      herd::after(cfg_.stall, [] { return std::optional<probe_report>(); }));
    if (!r_.error.empty()) return false;
    if (!rep) return fail("no probe report for the stall time");
    if (!rep->error.empty()) return fail(rep->error);
    if (rep->phase != phase) return fail("a probe report out of order");
    if (phase == 0) r_.probe_idle = rep->lat;
    if (phase == 1) r_.probe_during = rep->lat;
    if (phase == 2) r_.probe_paced = rep->lat;
    if (phase >= 0) {
      r_.probe_sent += rep->sent;
      r_.probe_read += rep->read;
      r_.probe_out_of_order = rep->out_of_order;
    }
    return true;
  }

  // What the runtime counts for a sample of idle sessions.
  void runtime_accounting() {
    uint64_t sum = 0;
    for (herd::pid p : sample_)
      if (auto i = herd::introspect::process_info(p); i && i->row.hibernated) {
        sum += i->row.memory;
        ++r_.sampled;
      }
    if (r_.sampled) r_.runtime_bytes_per_session = double(sum) / double(r_.sampled);
    r_.client_bytes_per_session = shard_bytes_per_client();
  }

  // Until the sessions have given their stacks back (the measure needs
  // them hibernated) and the stack pools, quiet for a second, have given
  // the free stacks' pages back (stack_pool.cpp's quiet trim): what stays is
  // the sessions', not the burst's. A measuring program's wait, bounded;
  // skipped when not measuring.
  void settle() {
    if (!cfg_.measure_memory) return;
    uint64_t slack = shards_.size() + 8;
    auto until = clock::now() + cfg_.stall;
    while (node_.runtime().metrics().stacks_in_use > slack && clock::now() < until)
      herd::sleep(std::chrono::milliseconds(5));
    herd::sleep(std::chrono::milliseconds(1500));
    for (uint64_t trimmed = ~uint64_t(0); clock::now() < until;) {
      uint64_t now = node_.runtime().metrics().stacks_trimmed;
      if (now == trimmed) break;
      trimmed = now;
      herd::sleep(std::chrono::milliseconds(500));
    }
  }

  void teardown() {
    if (!cfg_.teardown && r_.ok) {
      static std::shared_ptr<server> kept;  // the sessions outlive this call: the caller exits
      kept = srv_;
      return;
    }
    for (herd::pid p : shards_) herd::send(p, shard_stop{});
    herd::send(probe_, probe_stop{true});
    // Until every session has ended (the driver is the only process left):
    // the server state they started from must outlive them.
    auto until = clock::now() + cfg_.stall;
    while (herd::current_node_stats().live_processes > 1 && clock::now() < until)
      herd::receive([](const herd::any_message&) {}, herd::after(std::chrono::milliseconds(10), [] {}));
    if (herd::current_node_stats().live_processes > 1 && r_.error.empty()) {
      r_.ok = false;
      r_.error = "sessions still alive after the teardown's stall time";
    }
  }

  bool fail(std::string why) {
    if (r_.error.empty()) r_.error = std::move(why);
    return false;
  }

  herd::node& node_;
  ws_room_config cfg_;
  ws_room_result r_;
  std::shared_ptr<server> srv_;
  herd::net::memory_handler handler_;
  std::size_t room_read_last_ = 0;  // room frames read in the last broadcast
  std::vector<herd::pid> shards_;
  std::vector<std::size_t> capacity_;
  std::vector<std::size_t> opened_ = std::vector<std::size_t>(4096);
  std::vector<std::size_t> reported_open_ = std::vector<std::size_t>(4096);
  std::vector<herd::pid> sample_;
  herd::pid probe_;
};

}  // namespace

ws_room_result run_ws_room(herd::node& node, const ws_room_config& cfg) {
  ws_room_config c = cfg;
  c.sessions = std::max<std::size_t>(c.sessions, 1);
  c.shards = unsigned(std::clamp<std::size_t>(c.shards, 1, std::min<std::size_t>(c.sessions, 4096)));
  c.warmup = std::min(c.warmup, c.sessions / 2);
  return driver(node, c).run();
}

}  // namespace c1000k
