// Two contexts bouncing between each other, N jumps each way, with Boost's
// jump_fcontext and with herd's switch, alternated over REPS rounds so both
// see the same machine. One RESULT line per round and switch, then the
// medians and their ratio:
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

void bounce(bctx::transfer_t t) {
  for (;;) t = g_jump(t.fctx, nullptr);
}

double ns_per_switch(jump_fn j, long jumps) {
  static char stack[64 * 1024];
  g_jump = j;
  bctx::transfer_t t = j(bctx::make_fcontext(stack + sizeof stack, sizeof stack, &bounce), nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < jumps; ++i) t = j(t.fctx, nullptr);
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
  std::vector<double> boost, herd;
  for (int r = 0; r < reps; ++r) {
    boost.push_back(ns_per_switch(&bctx::jump_fcontext, jumps));
    herd.push_back(ns_per_switch(&herd_jump_fcontext, jumps));
    std::printf("RESULT tool=switchbench rep=%d boost_ns=%.2f herd_ns=%.2f\n", r, boost.back(), herd.back());
  }
  const double b = median(boost), h = median(herd);
  std::printf("RESULT tool=switchbench median boost_ns=%.2f herd_ns=%.2f ratio=%.3f\n", b, h, h / b);
  return 0;
}
