#include <herd/actors/detail/remote_nodes.hpp>

#include <atomic>

namespace herd::detail {

namespace {
std::atomic<remote_nodes_source> source{nullptr};
}  // namespace

void set_remote_nodes_source(remote_nodes_source f) noexcept { source.store(f, std::memory_order_release); }

remote_nodes_report remote_nodes() {
  if (remote_nodes_source f = source.load(std::memory_order_acquire)) return f();
  return {};
}

}  // namespace herd::detail
