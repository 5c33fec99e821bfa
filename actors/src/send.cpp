#include <herd/actors/send.hpp>
#include <herd/runtime/sched.hpp>

#include <optional>

#include "node_state.hpp"
#include "process.hpp"

namespace herd::detail {

std::optional<pid> lookup_name(std::string_view name);

bool deliver(pid to, message* m) noexcept {
  bool delivered = false;
  if (node_state* n = current_node()) {
    // Foreign threads must be counted as readers while they hold the pointer.
    rt::foreign_read_guard g;
    if (process* p = n->table.lookup(to)) {
      p->mbox.push(m);
      rt::wake(p);
      delivered = true;
    }
  }
  if (!delivered) destroy_message(m);
  rt::consume_reduction();
  return delivered;
}

bool deliver(std::string_view name, message* m) noexcept {
  std::optional<pid> to = lookup_name(name);
  if (!to) {
    destroy_message(m);
    return false;
  }
  return deliver(*to, m);
}

}  // namespace herd::detail
