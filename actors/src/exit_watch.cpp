// Exit watchers (herd/actors/detail/exit_watch.hpp): a fixed array of eight
// function pointers, written at start-up and read by every finishing worker;
// a process's marks are one byte in its control block's tail padding.
#include <herd/actors/detail/exit_watch.hpp>
#include <herd/runtime/sched.hpp>

#include "exit_watch_impl.hpp"
#include "node_state.hpp"
#include "process.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace herd::detail {
namespace {
constexpr unsigned max_watchers = 8;
std::atomic<exit_watcher> watchers[max_watchers];
std::atomic<unsigned> watcher_count{0};
}  // namespace

unsigned register_exit_watcher(exit_watcher fn) {
  unsigned slot = watcher_count.fetch_add(1, std::memory_order_relaxed);
  if (slot >= max_watchers) {
    std::fprintf(stderr, "herd: more than %u exit watchers registered\n", max_watchers);
    std::abort();
  }
  watchers[slot].store(fn, std::memory_order_release);
  return slot;
}

bool watch_exit(pid p, unsigned slot) {
  node_state* n = current_node();
  if (!n || slot >= max_watchers) return false;
  rt::foreign_read_guard g;  // the block stays readable while we hold it
  process* proc = n->table.lookup(p);
  if (!proc) return false;
  proc->exit_watch.fetch_or(uint8_t(1u << slot), std::memory_order_seq_cst);
  return n->table.lookup(p) == proc;
}

void run_exit_watchers(process* p, const exit_reason& why) noexcept {
  uint8_t marks = p->exit_watch.load(std::memory_order_seq_cst);
  for (unsigned i = 0; marks; ++i, marks >>= 1)
    if (marks & 1)
      if (exit_watcher fn = watchers[i].load(std::memory_order_acquire)) fn(p->id, why);
}

}  // namespace herd::detail
