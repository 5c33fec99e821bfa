// One-second samples of the node's counters, taken by the observer's thread,
// so rates and utilization cover the interval between the two most recent
// samples (the protocol's rule; 0 until there are two).
#pragma once
#include <herd/runtime/runtime.hpp>

#include <cstdint>
#include <optional>
#include <vector>

namespace herd::observer {

struct sample {
  uint64_t at_ns = 0;  // steady clock
  uint64_t messages = 0, switches = 0, spawned = 0;
  std::vector<uint64_t> busy_ns;  // per worker
};

struct rates {
  double messages_per_s = 0, switches_per_s = 0, spawns_per_s = 0;
  std::vector<double> utilization;  // per worker, 0..1
};

class sampler {
 public:
  // The observer's thread: takes a sample when one is due. Returns the
  // milliseconds until the next one is due.
  int tick();
  rates current(std::size_t workers) const;

 private:
  std::optional<sample> prev_, last_;
};

sample take_sample();

}  // namespace herd::observer
