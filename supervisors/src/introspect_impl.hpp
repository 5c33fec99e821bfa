// The supervisor process's side of introspection (introspect.cpp).
#pragma once
#include <herd/supervisors/introspect.hpp>

#include <cstddef>

namespace herd::supervisor::detail {

struct state;

// In the supervisor's stack frame for its whole life after init: joins the
// registry of live supervisors, leaves it when the stack unwinds (any exit).
class registration {
 public:
  explicit registration(const state& s);
  ~registration();
  registration(const registration&) = delete;
  registration& operator=(const registration&) = delete;

 private:
  pid self_;
};

// The observer's children request, answered from the supervisor's loop.
tree_children handle_tree(const state& s, std::size_t max);

}  // namespace herd::supervisor::detail
