// distbench_client — a herd node as the client of tools/distbench/distbench.sh:
//
//   distbench_client --sname S --cookie C --target NODE --label L [--msgs N] [--calls N] [--rounds R]
//                    [--busy-limit BYTES] [--busy-wait-us US]
//
// against NODE's `counter` and `echo` (examples/dist_echo, or the Erlang
// loop distbench.sh runs): N one-way {tick, I} to {counter, NODE} then a
// `count` call; then CALLS gen_server calls of `ping` to {echo, NODE}
// (herd::dist::call). One RESULT line per figure, with from=herd to=L.
// --busy-limit: dist_options::dist_buf_busy_limit (default 1 MiB; 0: never
// wait), for A/B runs of the sender's back-pressure. --busy-wait-us:
// dist_options::busy_wait (0 to 10000; the default, 50, without it), printed
// in each RESULT line as busy_wait_us=; given, the lines say from=herd_bwUS.
#include <herd/actors.hpp>
#include <herd/dist/gen.hpp>
#include <herd/dist/node.hpp>
#include <herd/dist/term_codec.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using namespace std::chrono;

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "distbench_client: %s\nusage: distbench_client --sname S --cookie C --target NODE --label L "
               "[--msgs N] [--calls N] [--rounds R] [--busy-limit BYTES] [--busy-wait-us US]\n",
               why);
  std::exit(2);
}

long number(const std::string& v, const char* what) {
  char* end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  if (*end != '\0' || n < 0) usage((std::string(what) + " takes a number").c_str());
  return n;
}

double elapsed_us(steady_clock::time_point t0) {
  return double(duration_cast<nanoseconds>(steady_clock::now() - t0).count()) / 1000.0;
}

}  // namespace

int main(int argc, char** argv) {
  herd::dist::dist_options d;
  std::string target, label;
  long msgs = 1000000, calls = 20000, rounds = 2;
  std::string from = "herd";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) usage((a + " needs a value").c_str());
    std::string v = argv[++i];
    if (a == "--sname") d.sname = v;
    else if (a == "--cookie") d.cookie = v;
    else if (a == "--target") target = v;
    else if (a == "--label") label = v;
    else if (a == "--msgs") msgs = number(v, "--msgs");
    else if (a == "--calls") calls = number(v, "--calls");
    else if (a == "--rounds") rounds = number(v, "--rounds");
    else if (a == "--busy-wait-us") {
      long us = number(v, "--busy-wait-us");
      if (us > herd::rt::max_busy_wait.count())
        usage(("--busy-wait-us takes a number from 0 to " + std::to_string(herd::rt::max_busy_wait.count())).c_str());
      d.busy_wait = microseconds(us);
      from = "herd_bw" + std::to_string(us);
    } else if (a == "--busy-limit") d.dist_buf_busy_limit = std::size_t(number(v, "--busy-limit"));
    else usage(("unknown option " + a).c_str());
  }
  if (d.sname.empty() || target.empty() || label.empty()) usage("--sname, --target and --label are required");
  herd::node_options o;
  o.workers = 2;
  herd::node n(o);
  const long busy_wait_us = long(d.busy_wait.count());
  int code = 0;
  n.run([&] {
    auto me = herd::dist::start(d);
    if (!me) {
      std::fprintf(stderr, "distbench_client: %s\n", me.error().message().c_str());
      code = 1;
      return;
    }
    auto fail = [&](const char* what, const herd::dist::call_failure& f) {
      std::fprintf(stderr, "distbench_client: %s: %s\n", what, f.message().c_str());
      code = 1;
    };
    const herd::term ping = herd::atom("ping");
    for (long r = 0; r < rounds && code == 0; ++r) {
      if (auto z = herd::dist::call("counter", target, herd::atom("reset"), seconds(60)); !z) return fail("reset", z.error());
      auto t0 = steady_clock::now();
      for (long i = 0; i < msgs; ++i)
        herd::dist::send("counter", target, herd::term_to_binary(herd::term::tuple({herd::atom("tick"), i})));
      auto c = herd::dist::call("counter", target, herd::atom("count"), seconds(600));
      if (!c) return fail("count", c.error());
      double us = elapsed_us(t0);
      std::printf("RESULT workload=throughput from=%s to=%s busy_wait_us=%ld msgs=%ld counted=%s ms=%.1f msgs_per_s=%.0f\n",
                  from.c_str(), label.c_str(), busy_wait_us, msgs, herd::to_string(*c).c_str(), us / 1000, double(msgs) * 1e6 / us);
      std::fflush(stdout);
      t0 = steady_clock::now();
      for (long i = 0; i < calls; ++i) {
        auto p = herd::dist::call("echo", target, ping, seconds(60));
        if (!p) return fail("call", p.error());
        if (*p != ping) {
          std::fprintf(stderr, "distbench_client: echo answered %s\n", herd::to_string(*p).c_str());
          code = 1;
          return;
        }
      }
      std::printf("RESULT workload=call from=%s to=%s busy_wait_us=%ld calls=%ld us_per_call=%.1f\n", from.c_str(), label.c_str(),
                  busy_wait_us, calls,
                  calls ? elapsed_us(t0) / double(calls) : 0.0);
      std::fflush(stdout);
    }
    herd::dist::stop();
  });
  return code;
}
