// The actors layer's per-node state: the process table, spawn/exit counts and
// the root's exit. One node runs at a time (g_node).
#pragma once
#include <herd/actors/exit_reason.hpp>
#include <herd/actors/node.hpp>
#include <herd/runtime/thread_safety.hpp>

#include "process_table.hpp"

#include <atomic>
#include <condition_variable>
#include <memory>

namespace herd::detail {

struct node_state {
  node_state(const node_options& o, unsigned workers);

  void note_spawn() noexcept;
  void note_exit(process* p) noexcept;
  std::size_t live() const noexcept;

  node_options opts;
  unsigned workers;
  process_table table;
  // Per worker (+1 for foreign threads): relaxed counters written by one
  // thread each, summed by readers.
  struct alignas(64) counts {
    std::atomic<uint64_t> spawned{0};
    std::atomic<uint64_t> exited{0};
  };
  std::unique_ptr<counts[]> per_thread;
  // Serialises the foreign threads' writes to per_thread[workers] (an
  // element the analysis cannot name: its counters stay atomic for readers).
  rt::mutex foreign_counts_m;

  rt::mutex m;  // root_* below, and waking the node's thread
  std::condition_variable cv;
  bool root_done HERD_GUARDED_BY(m) = false;
  exit_reason root_reason HERD_GUARDED_BY(m);
  std::atomic<bool> draining{false};  // the node waits for the last exit
};

// The running node's state, or nullptr. Any thread. Inline: every send asks.
extern std::atomic<node_state*> g_node;
inline node_state* current_node() noexcept { return g_node.load(std::memory_order_acquire); }
void set_current_node(node_state* n) noexcept;

}  // namespace herd::detail
