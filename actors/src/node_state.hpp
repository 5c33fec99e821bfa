// The actors layer's per-node state: the process table, spawn/exit counts and
// the root's exit. One node runs at a time (g_node).
#pragma once
#include <herd/actors/exit_reason.hpp>
#include <herd/actors/node.hpp>

#include "process_table.hpp"

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>

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
  std::mutex foreign_counts_m;

  std::mutex m;  // root_* below, and waking the node's thread
  std::condition_variable cv;
  bool root_done = false;
  std::atomic<bool> draining{false};  // the node waits for the last exit
  exit_reason root_reason;
};

// The running node's state, or nullptr. Any thread.
node_state* current_node() noexcept;
void set_current_node(node_state* n) noexcept;

}  // namespace herd::detail
