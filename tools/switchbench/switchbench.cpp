// Two contexts bouncing between each other, N jumps each way, with Boost's
// jump_fcontext and with herd's switch, alternated over REPS rounds so both
// see the same machine. One RESULT line per round and switch, then the
// medians and their ratio, for two shapes:
//   flat    each side jumps from its own loop (two call sites, as the
//           scheduler loop and a fiber);
//   nested  both sides jump from the same three-deep chain of calls, as two
//           fibers handing off in receive -> park -> suspend: a switch that
//           returns where the other side's call came from lets the CPU's
//           return stack predict the returns that follow it.
//
//   switchbench [JUMPS] [REPS]      (defaults 20,000,000 and 7)
#include <boost/context/detail/fcontext.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace bctx = boost::context::detail;
extern "C" bctx::transfer_t herd_jump_fcontext(bctx::fcontext_t to, void* data);

namespace {

using jump_fn = bctx::transfer_t (*)(bctx::fcontext_t, void*);
jump_fn g_jump = nullptr;

bctx::fcontext_t g_other = nullptr;

// The nested shape's chain: the innermost call is the same site on both sides.
[[gnu::noinline]] void hop0() {
  g_other = g_jump(g_other, nullptr).fctx;
  asm volatile("");  // not a tail call
}
[[gnu::noinline]] void hop1() {
  hop0();
  asm volatile("");
}
[[gnu::noinline]] void hop2() {
  hop1();
  asm volatile("");
}

void bounce(bctx::transfer_t t) {
  for (;;) t = g_jump(t.fctx, nullptr);
}

void bounce_nested(bctx::transfer_t t) {
  g_other = t.fctx;
  for (;;) hop2();
}

double ns_per_switch(jump_fn j, long jumps, bool nested) {
  static char stack[64 * 1024];
  g_jump = j;
  bctx::transfer_t t = j(bctx::make_fcontext(stack + sizeof stack, sizeof stack, nested ? &bounce_nested : &bounce), nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  if (nested) {
    g_other = t.fctx;
    for (long i = 0; i < jumps; ++i) hop2();
  } else {
    for (long i = 0; i < jumps; ++i) t = j(t.fctx, nullptr);
  }
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  return ns / (2.0 * double(jumps));  // a round trip is two switches
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const long jumps = argc > 1 ? std::atol(argv[1]) : 20'000'000;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 7;
  if (jumps <= 0 || reps <= 0) {
    std::fprintf(stderr, "usage: switchbench [JUMPS > 0] [REPS > 0]\n");
    return 2;
  }
  for (bool nested : {false, true}) {
    const char* shape = nested ? "nested" : "flat";
    std::vector<double> boost, herd;
    for (int r = 0; r < reps; ++r) {
      boost.push_back(ns_per_switch(&bctx::jump_fcontext, jumps, nested));
      herd.push_back(ns_per_switch(&herd_jump_fcontext, jumps, nested));
      std::printf("RESULT tool=switchbench shape=%s rep=%d boost_ns=%.2f herd_ns=%.2f\n", shape, r, boost.back(),
                  herd.back());
    }
    const double b = median(boost), h = median(herd);
    std::printf("RESULT tool=switchbench shape=%s median boost_ns=%.2f herd_ns=%.2f ratio=%.3f\n", shape, b, h, h / b);
  }
  return 0;
}
