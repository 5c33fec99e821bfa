// A list of pids, one entry per add, in no particular order, where adding an
// entry and removing one are O(1) amortised: an index pid -> its positions,
// and a removal moves the last entry into the hole. pg's groups
// (tables/src/pg.cpp) and its scope sync across nodes (dist/src/pg_scope.cpp)
// keep their members in it, so a million members may join or leave one by one.
#pragma once

#include <herd/actors/pid.hpp>

#include <absl/container/flat_hash_map.h>
#include <absl/container/inlined_vector.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace herd::pg::detail {

class member_list {
 public:
  void add(pid p) {
    at_[p].push_back(static_cast<uint32_t>(list_.size()));
    list_.push_back(p);
  }
  void add(std::span<const pid> ps) {
    for (pid p : ps) add(p);
  }
  // Removes one entry of p; false if it has none.
  bool take_one(pid p) {
    auto it = at_.find(p);
    if (it == at_.end()) return false;
    const uint32_t i = it->second.back();
    it->second.pop_back();
    if (it->second.empty()) at_.erase(it);
    const auto last = static_cast<uint32_t>(list_.size() - 1);
    if (i != last) {
      const pid moved = list_[last];
      list_[i] = moved;
      auto& where = at_.find(moved)->second;
      *std::find(where.begin(), where.end(), last) = i;
    }
    list_.pop_back();
    return true;
  }
  // Removes one entry of each of ps; the ones it had.
  std::vector<pid> take(std::span<const pid> ps) {
    std::vector<pid> found;
    for (pid p : ps)
      if (take_one(p)) found.push_back(p);
    return found;
  }
  const std::vector<pid>& pids() const noexcept { return list_; }
  bool empty() const noexcept { return list_.empty(); }
  std::size_t size() const noexcept { return list_.size(); }

 private:
  std::vector<pid> list_;
  absl::flat_hash_map<pid, absl::InlinedVector<uint32_t, 1>> at_;
};

}  // namespace herd::pg::detail
