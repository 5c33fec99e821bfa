// One loaded copy of a module (one dlopen): the host's record of it. Owned by
// the registry (registry.hpp); reached from module code through its anchor.
#pragma once
#include <herd/actors/module.hpp>

#include <atomic>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace herd::detail {

enum class version_state {
  loading,    // dlopened, checks running; not visible to create()
  current,    // new handlers come from it; the registry holds one reference
  old,        // replaced (or unloaded); running handlers and messages keep it
  unloading,  // unreferenced: queued for dlclose
};

// The processes holding handlers of a version, as a count per process: a
// handler's destroy removes its entry in O(1) under the registry lock (a
// vector's find made n closing connections on one version O(n^2)).
class pid_multiset {
 public:
  void add(pid p) {
    ++m_[p];
    ++total_;
  }
  // Removes one entry of p (none: nothing).
  void remove(pid p) noexcept {
    auto it = m_.find(p);
    if (it == m_.end()) return;
    if (--it->second == 0) m_.erase(it);
    --total_;
  }
  std::size_t size() const noexcept { return total_; }  // entries, not processes
  std::size_t count(pid p) const noexcept {
    auto it = m_.find(p);
    return it == m_.end() ? 0 : it->second;
  }
  std::vector<pid> distinct() const {
    std::vector<pid> out;
    out.reserve(m_.size());
    for (const auto& [p, n] : m_) out.push_back(p);
    return out;
  }
  std::vector<pid> entries() const {  // p repeated once per entry
    std::vector<pid> out;
    out.reserve(total_);
    for (const auto& [p, n] : m_) out.insert(out.end(), n, p);
    return out;
  }

 private:
  std::unordered_map<pid, std::size_t> m_;
  std::size_t total_ = 0;
};

struct module_version {
  // Immutable once the loader has published the version.
  std::string name;
  std::string version;
  std::string path;         // the file it came from
  std::string staged_path;  // the copy that was dlopened
  std::vector<std::string> upgrade_from;
  bool never_switch = false;
  uint64_t interface_id = 0;
  std::string interface_name;
  void* dl = nullptr;
  const module_descriptor* desc = nullptr;
  module_anchor* anchor = nullptr;  // in the module: the reference count
  uint64_t serial = 0;              // unique per load in this process (handler_slot::refused)

  // Set (relaxed) when the version stops being current; read (relaxed) by
  // handler_ref::outdated at message boundaries. A late read only delays a
  // switch to the next boundary: upgrade() re-checks under the registry lock.
  std::atomic<bool> superseded{false};

  // Under the registry's mutex.
  version_state state = version_state::loading;
  pid_multiset actors;    // one entry per live handler made in a process
  pid_multiset watchers;  // one entry per watched live handler (code_changed)
  uint64_t switch_failures = 0;     // upgrades to this version that threw
  std::string last_switch_failure;  // the last one's module_error text

  bool upgrades_from(std::string_view v) const {
    for (const auto& u : upgrade_from)
      if (u == v) return true;
    return false;
  }
};

inline const char* to_string(version_state s) {
  switch (s) {
    case version_state::loading: return "loading";
    case version_state::current: return "current";
    case version_state::old: return "old";
    case version_state::unloading: return "unloading";
  }
  return "?";
}

}  // namespace herd::detail
