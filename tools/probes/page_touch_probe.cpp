// What the first write to a fresh anonymous page costs on this host, three
// ways (docs/handoff.md, session 28: why `deferred_calls 1M` is bound by the
// pages its blocked callers touch, not by herd's code).
//
//   g++ -O2 -std=c++20 tools/probes/page_touch_probe.cpp -o /tmp/touch
//   /tmp/touch MODE STRIDE_PAGES [N]
//     MODE 0  write one byte to each of N fresh 4 KiB pages (THP off): the
//             guest's page fault and whatever the hypervisor adds;
//     MODE 1  MADV_POPULATE_WRITE each page first (herd's stack allocator
//             does this for the tops of stacks it is about to hand out),
//             then write: the two costs printed apart;
//     MODE 2  the same writes in a MADV_HUGEPAGE region (THP "madvise").
//     STRIDE_PAGES 1: adjacent pages; 16: one page per 64 KiB, as the tops
//     of herd's default stacks are spaced.
//
// Prints one line per measured step:
//   RESULT probe=page_touch mode=.. stride=.. n=.. step=populate|touch us_per_page=..
// Not part of the CMake build: a measurement of the machine, not of herd.
#include <sys/mman.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace {
using clk = std::chrono::steady_clock;
double us_since(clk::time_point t0) { return std::chrono::duration<double, std::micro>(clk::now() - t0).count(); }
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODE(0|1|2) STRIDE_PAGES [N]\n", argv[0]);
    return 2;
  }
  const int mode = std::atoi(argv[1]);
  const std::size_t stride = std::strtoull(argv[2], nullptr, 10);
  const std::size_t n = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 200000;
  if (mode < 0 || mode > 2 || stride == 0 || n == 0) {
    std::fprintf(stderr, "%s: MODE is 0, 1 or 2; STRIDE_PAGES and N are positive\n", argv[0]);
    return 2;
  }
  const std::size_t page = 4096, huge = 2u << 20, len = n * stride * page;
  void* m = mmap(nullptr, len + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  // 2 MiB aligned, so that mode 2's region is made of whole huge pages.
  char* p = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(m) + huge - 1) & ~uintptr_t(huge - 1));
  if (madvise(p, len, mode == 2 ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0) std::perror("madvise (THP)");
  if (mode == 1) {
    auto t0 = clk::now();
    for (std::size_t i = 0; i < n; ++i)
      if (madvise(p + i * stride * page, page, MADV_POPULATE_WRITE) != 0) {
        std::perror("madvise (MADV_POPULATE_WRITE, Linux 5.14+)");
        return 1;
      }
    std::printf("RESULT probe=page_touch mode=%d stride=%zu n=%zu step=populate us_per_page=%.3f\n", mode, stride, n,
                us_since(t0) / double(n));
  }
  auto t0 = clk::now();
  for (std::size_t i = 0; i < n; ++i) reinterpret_cast<volatile char*>(p)[i * stride * page] = 1;
  std::printf("RESULT probe=page_touch mode=%d stride=%zu n=%zu step=touch us_per_page=%.3f\n", mode, stride, n,
              us_since(t0) / double(n));
  return 0;
}
