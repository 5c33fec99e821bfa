// dist_echo — a herd node for Erlang clusters (issue 18's example):
//
//   dist_echo --sname NAME [--cookie COOKIE] [--workers N]
//
// publishes the node NAME@HOST, prints "node NAME@HOST" (flushed) once other
// nodes can connect, and registers
//   echo     gen_server:call({echo, Node}, T) answers T; a plain {From, T}
//            (From a pid) is answered by sending T to From;
//   counter  counts every message other than calls; gen_server:call({counter,
//            Node}, count) answers the count, ..., reset) answers ok.
// SIGTERM (or SIGINT): closes its connections and exits 0. A bad option: a
// message and exit 2. Without --cookie: ~/.erlang.cookie, as erl.
#include <herd/actors.hpp>
#include <herd/dist/node.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <string>
#include <thread>

#include "gen_call.hpp"

namespace {

struct stop_signal {
  int signo;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "dist_echo: %s\nusage: dist_echo --sname NAME [--cookie COOKIE] [--workers N]\n", why);
  std::exit(2);
}

void echo() {
  for (;;)
    herd::receive([](herd::dist::etf_message& m) {
      if (auto c = dist_echo::parse_gen_call(m.bytes)) {
        herd::dist::send(c->from, dist_echo::reply(*c, c->request));
      } else if (auto p = dist_echo::parse_from_pair(m.bytes)) {
        herd::dist::send(p->first, std::move(p->second));
      }
    });
}

void counter() {
  long long count = 0;
  for (;;)
    herd::receive([&](herd::dist::etf_message& m) {
      auto c = dist_echo::parse_gen_call(m.bytes);
      if (!c) return void(++count);
      std::string req = dist_echo::request_atom(c->request);
      if (req == "count") {
        herd::dist::send(c->from, dist_echo::reply(*c, dist_echo::integer_term(count)));
      } else if (req == "reset") {
        count = 0;
        herd::dist::send(c->from, dist_echo::reply(*c, dist_echo::atom_term("ok")));
      } else {
        herd::dist::send(c->from, dist_echo::reply(*c, dist_echo::atom_term("badarg")));
      }
    });
}

}  // namespace

int main(int argc, char** argv) {
  herd::dist::dist_options d;
  unsigned workers = 0;
  bool have_cookie = false, have_workers = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a != "--sname" && a != "--cookie" && a != "--workers") usage(("unknown option " + a).c_str());
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
    herd::register_name("echo", herd::spawn(echo));
    herd::register_name("counter", herd::spawn(counter));
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
