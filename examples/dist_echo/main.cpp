// dist_echo — a herd node for Erlang clusters (issue 18's example):
//
//   dist_echo --sname NAME [--cookie COOKIE] [--workers N] [--busy-wait-us US]
//
// publishes the node NAME@HOST, prints "node NAME@HOST" (flushed) once other
// nodes can connect, and registers
//   echo     gen_server:call({echo, Node}, T) answers T; a plain {From, T}
//            (From a pid) is answered by sending T to From;
//   counter  counts every message other than calls; gen_server:call({counter,
//            Node}, count) answers the count, ..., reset) answers ok.
// SIGTERM (or SIGINT): closes its connections and exits 0. A bad option: a
// message and exit 2. Without --cookie: ~/.erlang.cookie, as erl.
// --busy-wait-us: dist_options::busy_wait, 0 to 10000 (default 50): while a
// node connection is up an idle worker spins this long before it sleeps, as
// BEAM's schedulers do (+sbwt); it trims a kernel wake-up off each call round
// trip at the cost of that much CPU per idle gap; 0: never spin
// (docs/distribution.md).
#include <herd/actors.hpp>
#include <herd/dist/gen.hpp>
#include <herd/dist/node.hpp>
#include <herd/dist/term_codec.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <string>
#include <thread>

namespace {

struct stop_signal {
  int signo;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "dist_echo: %s\nusage: dist_echo --sname NAME [--cookie COOKIE] [--workers N] [--busy-wait-us US]\n", why);
  std::exit(2);
}

// Calls and casts from other nodes arrive as herd::term (dist::export_server);
// any other message as the ETF bytes it came as.
struct echo : herd::server<echo> {
  using calls = herd::types<herd::term>;
  using infos = herd::types<herd::dist::etf_message>;
  herd::term handle_call(const herd::term& t, const herd::from&) { return t; }
  // {From, T}, From a pid: T to From.
  void handle_info(const herd::dist::etf_message& m) {
    auto t = herd::binary_to_term(m.bytes);
    if (!t || !t->is_tuple() || t->size() != 2 || !(*t)[0].is_pid()) return;
    const herd::erl_pid& p = (*t)[0].as_pid();
    herd::pid to = herd::dist::intern({std::string(p.node.text()), p.id, p.serial, p.creation});
    herd::dist::send(to, herd::term_to_binary((*t)[1]));
  }
};

struct counter : herd::server<counter> {
  using calls = herd::types<herd::term>;
  using casts = herd::types<herd::term>;
  using infos = herd::types<herd::dist::etf_message>;
  herd::term handle_call(const herd::term& req, const herd::from&) {
    if (req.is_atom(herd::atom("count"))) return herd::term(count);
    if (req.is_atom(herd::atom("reset"))) {
      count = 0;
      return herd::atom("ok");
    }
    return herd::atom("badarg");
  }
  void handle_cast(const herd::term&) { ++count; }
  void handle_info(const herd::dist::etf_message&) { ++count; }
  long long count = 0;
};

}  // namespace

int main(int argc, char** argv) {
  herd::dist::dist_options d;
  unsigned workers = 0;
  bool have_cookie = false, have_workers = false, have_busy_wait = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a != "--sname" && a != "--cookie" && a != "--workers" && a != "--busy-wait-us") usage(("unknown option " + a).c_str());
    if (i + 1 >= argc) usage((a + " needs a value").c_str());
    std::string v = argv[++i];
    if (v.empty()) usage((a + " needs a value").c_str());
    if (a == "--sname") {
      if (!d.sname.empty()) usage("--sname given twice");
      d.sname = v;
    } else if (a == "--cookie") {
      if (have_cookie) usage("--cookie given twice");
      have_cookie = true;
      d.cookie = v;
    } else if (a == "--busy-wait-us") {
      if (have_busy_wait) usage("--busy-wait-us given twice");
      have_busy_wait = true;
      char* end = nullptr;
      long us = std::strtol(v.c_str(), &end, 10);
      if (*end != '\0' || us < 0 || us > herd::rt::max_busy_wait.count())
        usage(("--busy-wait-us takes a number from 0 to " + std::to_string(herd::rt::max_busy_wait.count())).c_str());
      d.busy_wait = std::chrono::microseconds(us);
    } else {
      if (have_workers) usage("--workers given twice");
      have_workers = true;
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (*end != '\0' || n < 1 || n > 1024) usage("--workers takes a number from 1 to 1024");
      workers = unsigned(n);
    }
  }
  if (d.sname.empty()) usage("--sname is required");

  std::signal(SIGPIPE, SIG_IGN);
  // Signals go to one waiting thread, blocked everywhere else (workers inherit the mask).
  sigset_t stop_set;
  sigemptyset(&stop_set);
  sigaddset(&stop_set, SIGINT);
  sigaddset(&stop_set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_set, nullptr);

  herd::node_options o;
  o.workers = workers;
  herd::node n(o);
  int code = 0;
  n.run([&] {
    auto me = herd::dist::start(d);
    if (!me) {
      std::fprintf(stderr, "dist_echo: %s\n", me.error().message().c_str());
      code = me.error().code == herd::dist::errc::bad_options ? 2 : 1;
      return;
    }
    herd::dist::export_server(herd::start_server<echo>(herd::spawn_options{.name = "echo"}));
    herd::dist::export_server(herd::start_server<counter>(herd::spawn_options{.name = "counter"}));
    herd::pid root = herd::self();
    std::thread([root, stop_set] {
      int signo = 0;
      sigwait(&stop_set, &signo);
      herd::send(root, stop_signal{signo});
    }).detach();
    std::printf("node %s\n", me->c_str());
    std::fflush(stdout);
    herd::receive([](stop_signal) {});
    herd::dist::stop();
  });
  return code;
}
