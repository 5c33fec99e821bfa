// The intrusive node a timer wheel links. Public only because it is embedded in
// herd::rt::fiber (a receive timeout must not allocate); its fields belong to
// the wheel that links it.
#pragma once
#include <cstdint>

namespace herd::rt {

struct timer_node {
  timer_node* prev = nullptr;
  timer_node* next = nullptr;
  uint64_t deadline = 0;  // absolute tick (ms since runtime start)
  uint8_t level = 0, slot = 0;
  bool linked = false;
  uint8_t kind = 0;  // which embedding owns this node (see timer_service)
};

}  // namespace herd::rt
