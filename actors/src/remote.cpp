#include <herd/actors/detail/remote.hpp>

#include <atomic>
#include <cstdio>

#include "remote_signals.hpp"

namespace herd::detail {

namespace {
// Release on install pairs with the acquire in each use: the hooks' targets
// (the dist layer's tables) are set up before they are published.
std::atomic<const remote_hooks*> installed{nullptr};
}  // namespace

void set_remote_hooks(const remote_hooks* h) noexcept { installed.store(h, std::memory_order_release); }

bool deliver_remote(pid to, message* m) noexcept {
  if (m->kind != 0 && is_remote_signal_kind(m->kind)) return deliver_remote_signal(to, m);
  const remote_hooks* h = installed.load(std::memory_order_acquire);
  if (!h || !to.valid()) {
    destroy_message(m);
    return false;
  }
  return h->deliver(to, m);
}

std::string remote_pid_to_string(uint32_t index, uint32_t generation) {
  if (const remote_hooks* h = installed.load(std::memory_order_acquire)) return h->format(pid{index, generation});
  char buf[48];
  int n = std::snprintf(buf, sizeof buf, "<remote.%u.%u>", index & ~remote_pid_bit, generation);
  return std::string(buf, static_cast<std::size_t>(n));
}

}  // namespace herd::detail
