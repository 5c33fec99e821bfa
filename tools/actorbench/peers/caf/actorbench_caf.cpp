// CAF 0.17 peer of herd's actorbench: event-based actors and send().
//
//   ./actorbench_caf WORKLOAD ARGS... [--hibernate] [--workers N]
//
// The workload actors are event-based and run on the N scheduler workers. Main
// is the coordinator: it spawns, waits in a scoped_actor and times. Spawning
// and sending from outside the workers matters in CAF 0.17: jobs from inside a
// worker go to its own queue, and stealing from that queue walks the whole list
// (double_ended_queue::take_tail), so an in-actor coordinator spawning 1M
// actors goes quadratic (100k idle actors took 19 s).
#include <caf/all.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace caf;

namespace {

using started_atom = atom_constant<atom("started")>;
using stop_atom = atom_constant<atom("stop")>;
using exited_atom = atom_constant<atom("exited")>;
using done_atom = atom_constant<atom("done")>;
using next_atom = atom_constant<atom("next")>;
using token_atom = atom_constant<atom("token")>;

using clk = std::chrono::steady_clock;

double ms_between(clk::time_point a, clk::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

int64_t per_s(int64_t count, clk::time_point a, clk::time_point b) {
  return static_cast<int64_t>(count / std::chrono::duration<double>(b - a).count());
}

std::string fmt1(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

[[noreturn]] void usage(const std::string& msg) {
  std::cerr << "actorbench_caf: " << msg
            << "\nusage: skynet N | spawn_idle N [--hibernate] | pingpong RTS | "
               "pingpong_many PAIRS RTS | ring N LAPS | fanin SENDERS MSGS | "
               "call CALLS | restart RESTARTS  [--workers N]\n";
  std::exit(2);
}

int64_t pos_int(const std::string& s) {
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v <= 0)
    usage("not a positive integer: " + s);
  return v;
}

int64_t rss_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stoll(line.substr(6)) * 1024;
  std::abort();
}

// ---- skynet ------------------------------------------------------------------

struct sky_state {
  int64_t sum = 0;
  int pending = 10;
};

behavior skynet(stateful_actor<sky_state>* self, actor parent, int64_t num,
                int64_t size) {
  if (size == 1) {
    self->send(parent, num);
    return {};  // an empty behavior ends the actor
  }
  int64_t sub = size / 10;
  for (int i = 0; i < 10; ++i)
    self->spawn(skynet, actor_cast<actor>(self), num + i * sub, sub);
  return {[=](int64_t x) {
    self->state.sum += x;
    if (--self->state.pending == 0) {
      self->send(parent, self->state.sum);
      self->quit();
    }
  }};
}

std::string run_skynet(actor_system& sys, scoped_actor& self, int64_t n) {
  auto t0 = clk::now();
  sys.spawn(skynet, actor_cast<actor>(self), int64_t{0}, n);
  int64_t sum = 0;
  self->receive([&](int64_t x) { sum = x; });
  auto t1 = clk::now();
  if (sum != n * (n - 1) / 2) {
    std::cerr << "actorbench_caf: skynet bad sum " << sum << "\n";
    std::exit(1);
  }
  return "sum=" + std::to_string(sum) + " wall_ms=" + fmt1(ms_between(t0, t1));
}

// ---- spawn_idle --------------------------------------------------------------
// "All started" = main has one `started` from every child, sent as the
// child's first act (its behavior is installed right after). "All exited" =
// one `exited` from every child, sent just before it quits.

behavior idle_child(event_based_actor* self, actor coord) {
  self->send(coord, started_atom::value);
  return {[=](stop_atom) {
    self->send(coord, exited_atom::value);
    self->quit();
  }};
}

std::string run_spawn_idle(actor_system& sys, scoped_actor& self, int64_t n,
                           bool hibernate) {
  std::vector<actor> kids;
  kids.reserve(n);
  auto me = actor_cast<actor>(self);
  int64_t rss0 = rss_bytes();
  auto t0 = clk::now();
  for (int64_t i = 0; i < n; ++i)
    kids.push_back(sys.spawn(idle_child, me));
  int64_t i = 0;
  self->receive_for(i, n)([](started_atom) {});
  auto t1 = clk::now();
  int64_t rss1 = rss_bytes();
  auto t2 = clk::now();
  for (auto& k : kids)
    self->send(k, stop_atom::value);
  i = 0;
  self->receive_for(i, n)([](exited_atom) {});
  auto t3 = clk::now();
  return std::string(hibernate ? "hibernate=unsupported" : "hibernate=no")
         + " spawn_all_started_ms=" + fmt1(ms_between(t0, t1))
         + " bytes_per_actor=" + std::to_string((rss1 - rss0) / n)
         + " stop_all_exited_ms=" + fmt1(ms_between(t2, t3));
}

// ---- pingpong / pingpong_many -------------------------------------------------

behavior pong(event_based_actor* self) {
  return {
    [](int64_t k) { return k; },  // the reply goes back to the sender
    [=](stop_atom) { self->quit(); },
  };
}

behavior ping(event_based_actor* self, actor coord, int64_t rts) {
  auto partner = self->spawn(pong);
  self->send(partner, rts);
  return {[=](int64_t k) {
    if (k > 1) {
      self->send(partner, k - 1);
      return;
    }
    self->send(partner, stop_atom::value);
    self->send(coord, done_atom::value);
    self->quit();
  }};
}

// Returns the wall time for `pairs` ping/pong pairs doing `rts` round trips.
double run_pairs(actor_system& sys, scoped_actor& self, int64_t pairs,
                 int64_t rts) {
  auto t0 = clk::now();
  for (int64_t i = 0; i < pairs; ++i)
    sys.spawn(ping, actor_cast<actor>(self), rts);
  int64_t i = 0;
  self->receive_for(i, pairs)([](done_atom) {});
  return ms_between(t0, clk::now());
}

// ---- ring ------------------------------------------------------------------
// Node i forwards to node i-1; the first node learns the last one's handle.
// `stop` travels once round; the first node is gone when it comes back.

behavior ring_node(stateful_actor<actor>* self, actor coord, actor next) {
  self->state = std::move(next);
  return {
    [=](next_atom, actor n) { self->state = std::move(n); },
    [=](token_atom, int64_t k) {
      if (k == 0)
        self->send(coord, done_atom::value);
      else
        self->send(self->state, token_atom::value, k - 1);
    },
    [=](stop_atom) {
      self->send(self->state, stop_atom::value);
      self->quit();
    }};
}

std::string run_ring(actor_system& sys, scoped_actor& self, int64_t n,
                     int64_t laps) {
  auto me = actor_cast<actor>(self);
  auto t0 = clk::now();
  auto first = sys.spawn(ring_node, me, actor{});
  auto prev = first;
  for (int64_t i = 1; i < n; ++i)
    prev = sys.spawn(ring_node, me, prev);
  self->send(first, next_atom::value, prev);
  auto t1 = clk::now();
  self->send(first, token_atom::value, n * laps);
  self->receive([](done_atom) {});
  auto t2 = clk::now();
  self->send(first, stop_atom::value);
  return "spawn_ms=" + fmt1(ms_between(t0, t1))
         + " hops_per_s=" + std::to_string(per_s(n * laps, t1, t2));
}

// ---- fanin -------------------------------------------------------------------

behavior fanin_sender(event_based_actor* self, actor recv, int64_t msgs) {
  for (int64_t k = msgs; k > 0; --k)
    self->send(recv, k);
  return {};
}

behavior fanin_recv(stateful_actor<int64_t>* self, actor coord, int64_t total) {
  self->state = total;
  return {[=](int64_t) {
    if (--self->state == 0) {
      self->send(coord, done_atom::value);
      self->quit();
    }
  }};
}

std::string run_fanin(actor_system& sys, scoped_actor& self, int64_t senders,
                      int64_t msgs) {
  auto t0 = clk::now();
  auto recv = sys.spawn(fanin_recv, actor_cast<actor>(self), senders * msgs);
  for (int64_t i = 0; i < senders; ++i)
    sys.spawn(fanin_sender, recv, msgs);
  self->receive([](done_atom) {});
  auto t1 = clk::now();
  return "wall_ms=" + fmt1(ms_between(t0, t1)) + " msgs_per_s="
         + std::to_string(per_s(senders * msgs, t0, t1)) + " cross_core_pct=na";
}

// ---- call --------------------------------------------------------------------
// Request/response round trips to an event-based server that replies with the
// request. ns_per_call: an event-based client chains request(...).then(...),
// actor to actor, as herd's call is process to process. ns_per_call_blocking
// (informational): main's scoped_actor doing request(...).receive, which is a
// thread blocking on a condition variable per reply — measured over at most
// 10,000 calls, as it is ~100x slower.

behavior echo_server() {
  return {[](int64_t k) { return k; }};
}

struct call_client_state {
  int64_t i = 0;
  int64_t sum = 0;
};

void call_next(stateful_actor<call_client_state>* self, actor srv, actor coord, int64_t n) {
  if (self->state.i == n) {
    self->send(coord, done_atom::value, self->state.sum);
    self->quit();
    return;
  }
  self->request(srv, infinite, self->state.i++).then([=](int64_t v) {
    self->state.sum += v;
    call_next(self, srv, coord, n);
  });
}

behavior call_client(stateful_actor<call_client_state>* self, actor srv, actor coord, int64_t n) {
  call_next(self, srv, coord, n);
  return {};
}

std::string run_call(actor_system& sys, scoped_actor& self, int64_t n) {
  auto srv = sys.spawn(echo_server);
  int64_t sum = -1;
  auto t0 = clk::now();
  sys.spawn(call_client, srv, actor_cast<actor>(self), n);
  self->receive([&](done_atom, int64_t s) { sum = s; });
  auto t1 = clk::now();
  int64_t nb = n < 10000 ? n : 10000, bsum = 0;
  bool failed = false;
  auto t2 = clk::now();
  for (int64_t i = 0; i < nb; ++i)
    self->request(srv, infinite, i)
        .receive([&](int64_t v) { bsum += v; }, [&](error&) { failed = true; });
  auto t3 = clk::now();
  anon_send_exit(srv, exit_reason::user_shutdown);
  if (failed || sum != n * (n - 1) / 2 || bsum != nb * (nb - 1) / 2) {
    std::cerr << "actorbench_caf: call failed or bad sum " << sum << "\n";
    std::exit(1);
  }
  auto ns = [](clk::time_point a, clk::time_point b) {
    return std::chrono::duration<double, std::nano>(b - a).count();
  };
  return "calls=" + std::to_string(n) + " ns_per_call=" + fmt1(ns(t0, t1) / n)
         + " ns_per_call_blocking=" + fmt1(ns(t2, t3) / nb);
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> pos;
  bool hibernate = false;
  int64_t workers = std::thread::hardware_concurrency();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--hibernate") {
      hibernate = true;
    } else if (a == "--workers") {
      if (++i == argc)
        usage("--workers needs a value");
      workers = pos_int(argv[i]);
    } else if (a.rfind("-", 0) == 0) {
      usage("unknown flag " + a);
    } else {
      pos.push_back(a);
    }
  }
  if (pos.empty())
    usage("no workload");
  const std::string& w = pos[0];
  size_t nargs = pos.size() - 1;
  auto arg = [&](size_t i) { return pos_int(pos[i]); };
  bool ok = (nargs == 1 && (w == "skynet" || w == "spawn_idle" || w == "pingpong"
                            || w == "call" || w == "restart"))
            || (nargs == 2 && (w == "pingpong_many" || w == "ring" || w == "fanin"));
  if (!ok)
    usage("bad workload/arguments");
  if (w == "skynet")
    for (int64_t m = arg(1); m != 1; m /= 10)
      if (m % 10 != 0)
        usage("skynet N must be a power of 10");

  actor_system_config cfg;
  cfg.set("scheduler.max-threads", workers);
  actor_system sys{cfg};
  std::string fields;
  {
    scoped_actor self{sys};
    if (w == "skynet") {
      fields = run_skynet(sys, self, arg(1));
    } else if (w == "spawn_idle") {
      fields = run_spawn_idle(sys, self, arg(1), hibernate);
    } else if (w == "pingpong") {
      fields = "ns_per_rt=" + fmt1(run_pairs(sys, self, 1, arg(1)) * 1e6 / arg(1));
    } else if (w == "pingpong_many") {
      double ms = run_pairs(sys, self, arg(1), arg(2));
      fields = "wall_ms=" + fmt1(ms) + " msgs_per_s="
               + std::to_string(static_cast<int64_t>(arg(1) * arg(2) * 2 * 1e3 / ms));
    } else if (w == "call") {
      fields = run_call(sys, self, arg(1));
    } else if (w == "restart") {
      arg(1);
      fields = "unsupported=1";  // CAF 0.17 has no supervisors
    } else if (w == "ring") {
      fields = run_ring(sys, self, arg(1), arg(2));
    } else {
      fields = run_fanin(sys, self, arg(1), arg(2));
    }
  }
  std::printf("RESULT impl=caf workload=%s %s workers=%zu\n", w.c_str(),
              fields.c_str(), sys.scheduler().num_workers());
  std::fflush(stdout);
  return 0;
}
