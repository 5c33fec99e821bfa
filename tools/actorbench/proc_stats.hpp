// What the OS says about this process: RSS and page faults.
#pragma once
#include <cstdint>

namespace actorbench {

struct proc_stats {
  uint64_t rss_bytes = 0;
  uint64_t minflt = 0;
  uint64_t majflt = 0;
  uint64_t pte_bytes = 0;  // page tables (VmPTE): not in RSS, but memory all the same
};

proc_stats read_proc_stats();

}  // namespace actorbench
