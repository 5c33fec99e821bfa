#include "sched/asym_fence.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace herd::rt::asym {

namespace {
long membarrier(int cmd) noexcept { return syscall(__NR_membarrier, cmd, 0u, 0); }

bool register_once() noexcept {
  long mask = membarrier(MEMBARRIER_CMD_QUERY);
  if (mask < 0 || !(mask & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) return false;
  return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}
}  // namespace

bool available() noexcept {
  static const bool ok = register_once();
  return ok;
}

bool heavy() noexcept {
  if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return true;
  // A child forked after the parent registered may have to register itself.
  return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
         membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0;
}

}  // namespace herd::rt::asym
