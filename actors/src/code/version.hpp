// One loaded copy of a module (one dlopen): the host's record of it. Owned by
// the registry (module_registry.hpp); reached from module code through its anchor.
#pragma once
#include <herd/actors/module.hpp>
#include <herd/runtime/thread_safety.hpp>

#include <atomic>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace herd::detail {

namespace code {
// The code server's one lock: the registry's tables (module_registry.hpp) and the
// fields of a version marked below. A global rather than a member of the
// registry so that a version's fields can name it. A short lock: nothing
// under it blocks, sends or calls module code.
inline rt::mutex registry_mutex;
}  // namespace code

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

  version_state state HERD_GUARDED_BY(code::registry_mutex) = version_state::loading;
  // One entry per live handler made in a process.
  pid_multiset actors HERD_GUARDED_BY(code::registry_mutex);
  // One entry per watched live handler (code_changed).
  pid_multiset watchers HERD_GUARDED_BY(code::registry_mutex);
  // Upgrades to this version that threw, and the last one's module_error text.
  uint64_t switch_failures HERD_GUARDED_BY(code::registry_mutex) = 0;
  std::string last_switch_failure HERD_GUARDED_BY(code::registry_mutex);

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
