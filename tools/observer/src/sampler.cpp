// See sampler.hpp.
#include "sampler.hpp"

#include <herd/actors/introspect.hpp>
#include <herd/actors/node.hpp>

#include <algorithm>
#include <chrono>

namespace herd::observer {

sample take_sample() {
  sample s;
  s.at_ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now().time_since_epoch())
                         .count());
  rt::runtime_metrics m;
  if (rt::current_metrics(m))
    for (auto& w : m.workers) {
      s.switches += w.switches;
      s.busy_ns.push_back(w.busy_ns);
    }
  s.messages = introspect::messages_made();
  s.spawned = current_node_stats().spawned;
  return s;
}

int sampler::tick() {
  constexpr uint64_t period_ns = 1'000'000'000;
  uint64_t now = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::steady_clock::now().time_since_epoch())
                              .count());
  if (!last_ || now - last_->at_ns >= period_ns) {
    prev_ = std::move(last_);
    last_ = take_sample();
    return 1000;
  }
  return int((period_ns - (now - last_->at_ns)) / 1'000'000) + 1;
}

rates sampler::current(std::size_t workers) const {
  rates r;
  r.utilization.assign(workers, 0.0);
  if (!prev_ || !last_ || last_->at_ns <= prev_->at_ns) return r;
  double dt = double(last_->at_ns - prev_->at_ns) / 1e9;
  auto rate = [&](uint64_t a, uint64_t b) { return b > a ? double(b - a) / dt : 0.0; };
  r.messages_per_s = rate(prev_->messages, last_->messages);
  r.switches_per_s = rate(prev_->switches, last_->switches);
  r.spawns_per_s = rate(prev_->spawned, last_->spawned);
  for (std::size_t i = 0; i < workers && i < prev_->busy_ns.size() && i < last_->busy_ns.size(); ++i) {
    double busy = last_->busy_ns[i] > prev_->busy_ns[i] ? double(last_->busy_ns[i] - prev_->busy_ns[i]) : 0.0;
    r.utilization[i] = std::clamp(busy / (dt * 1e9), 0.0, 1.0);
  }
  return r;
}

}  // namespace herd::observer
