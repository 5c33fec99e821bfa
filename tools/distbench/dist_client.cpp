// distbench's herd client: one-way small-message throughput from a herd node
// to `counter` on another node (dist_echo's, or the Erlang one distbench.sh
// starts), as the BEAM client measures it: reset, N x {tick, I} to
// {counter, Node} by name, then gen_server:call({counter, Node}, count) —
// the clock stops when the count (which must be N) comes back.
//
//   dist_client --sname NAME --cookie C --target NODE [--n N] [--label L] [--workers W]
//
// Prints one line: RESULT workload=throughput from=herd to=L msgs=N counted=C ms=... msgs_per_s=...
#include <herd/actors.hpp>
#include <herd/dist/node.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

namespace {

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "dist_client: %s\nusage: dist_client --sname NAME --cookie C --target NODE [--n N] [--label L] "
               "[--workers W]\n",
               why);
  std::exit(2);
}

// gen_server:call(To, Request) from a herd process: {'$gen_call', {Self, Ref}, Request},
// answered by {Ref, Reply}. nullopt after `limit`.
std::optional<herd::term> gen_call(const herd::dist::name_at& to, const herd::term& request,
                                   std::chrono::milliseconds limit) {
  static uint32_t serial = 0;
  auto d = herd::dist::describe(herd::self());
  if (!d) return std::nullopt;
  herd::term ref = herd::term::reference(herd::erl_ref{herd::atom(d->node), d->creation, 3, {++serial, d->id, 0x5eed}});
  herd::send(to, herd::term::tuple({herd::atom("$gen_call"), herd::term::tuple({herd::to_term(herd::self()), ref}), request}));
  std::optional<herd::term> reply;
  for (bool waiting = true; waiting;)
    herd::receive(
        [&](herd::dist::etf_message& m) {
          auto t = m.term();
          if (t && t->is_tuple() && t->size() == 2 && (*t)[0] == ref) {
            reply = (*t)[1];
            waiting = false;
          }
        },
        herd::after(limit, [&] { waiting = false; }));
  return reply;
}

}  // namespace

int main(int argc, char** argv) {
  herd::dist::dist_options d;
  std::string target, label = "herd";
  long n = 1000000;
  unsigned workers = 2;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) usage((a + " needs a value").c_str());
    std::string v = argv[++i];
    if (a == "--sname") d.sname = v;
    else if (a == "--cookie") d.cookie = v;
    else if (a == "--target") target = v;
    else if (a == "--label") label = v;
    else if (a == "--n") n = std::strtol(v.c_str(), nullptr, 10);
    else if (a == "--workers") workers = unsigned(std::strtoul(v.c_str(), nullptr, 10));
    else usage(("unknown option " + a).c_str());
  }
  if (d.sname.empty() || target.empty() || n < 1 || workers < 1) usage("--sname and --target are required");
  herd::node_options o;
  o.workers = workers;
  o.quiet = true;
  herd::node node(o);
  int code = 0;
  node.run([&] {
    auto me = herd::dist::start(d);
    if (!me) {
      std::fprintf(stderr, "dist_client: %s\n", me.error().message().c_str());
      code = 1;
      return;
    }
    if (auto c = herd::dist::connect(target, std::chrono::seconds(30)); !c) {
      std::fprintf(stderr, "dist_client: %s\n", c.error().message().c_str());
      code = 1;
      return;
    }
    herd::dist::name_at counter{"counter", target};
    using namespace std::chrono;
    if (!gen_call(counter, herd::atom("reset"), seconds(60))) {
      std::fprintf(stderr, "dist_client: no answer to reset\n");
      code = 1;
      return;
    }
    auto t0 = steady_clock::now();
    herd::atom tick("tick");
    for (long i = 1; i <= n; ++i) herd::send(counter, herd::term::tuple({tick, i}));
    auto count = gen_call(counter, herd::atom("count"), seconds(600));
    double us = double(duration_cast<microseconds>(steady_clock::now() - t0).count());
    if (!count) {
      std::fprintf(stderr, "dist_client: no answer to count\n");
      code = 1;
      return;
    }
    std::printf("RESULT workload=throughput from=herd to=%s msgs=%ld counted=%s ms=%.1f msgs_per_s=%.0f\n",
                label.c_str(), n, herd::to_string(*count).c_str(), us / 1000, double(n) * 1e6 / us);
    std::fflush(stdout);
    herd::dist::stop();
  });
  return code;
}
