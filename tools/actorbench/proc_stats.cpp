#include "proc_stats.hpp"

#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace actorbench {

proc_stats read_proc_stats() {
  proc_stats s;
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f)) {
      unsigned long long v;
      if (std::sscanf(line, "VmRSS: %llu kB", &v) == 1) s.rss_bytes = v * 1024;
      if (std::sscanf(line, "VmPTE: %llu kB", &v) == 1) s.pte_bytes = v * 1024;
    }
    std::fclose(f);
  }
  if (FILE* f = std::fopen("/proc/self/stat", "r")) {
    // Fields 10 (minflt) and 12 (majflt), after the parenthesised command name.
    char buf[1024];
    size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    std::fclose(f);
    if (const char* p = std::strrchr(buf, ')')) {
      unsigned long long minflt = 0, majflt = 0;
      std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %llu %*u %llu", &minflt, &majflt);
      s.minflt = minflt;
      s.majflt = majflt;
    }
  }
  return s;
}

}  // namespace actorbench
