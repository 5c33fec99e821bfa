// The code server's state: per module name a current and an old version, and
// every loaded copy until it is dlclosed. See registry.cpp for the design.
#pragma once
#include "code/version.hpp"

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace herd::detail::code {

struct entry {
  module_version* current = nullptr;
  module_version* old = nullptr;
};

class registry {
 public:
  // Any thread. Never destroyed (module references may be dropped by static
  // destructors at exit).
  static registry& get();

  // All under m. A short lock: nothing under it blocks, sends or calls module
  // code (std::mutex held across no suspension).
  std::mutex m;
  std::map<std::string, entry, std::less<>> table;
  std::vector<std::unique_ptr<module_version>> versions;  // not yet dlclosed
  std::string module_dir;

  // Loader: registers a version in state `loading` with a staged file name
  // no other live version uses. Any thread.
  module_version* add_loading(const std::string& path, const std::string& dir, const std::string& stem,
                              const std::string& hash);
  // Loader: forgets a version that was never dlopened, or was dlclosed by
  // the loader itself (no anchor published). Removes its staged file.
  void discard(module_version* v) noexcept;

  // The last reference is gone (module_release): queue the dlclose. Any
  // thread, not holding m.
  void unreferenced(module_version* v) noexcept;

  // With m held: drop pid `p` from v's actors once.
  static void untrack_locked(module_version* v, pid p) noexcept;
  // With m held: drop pid `p` from v's watchers once.
  static void unwatch_locked(module_version* v, pid p) noexcept;

 private:
  void reaper_main();
  std::condition_variable cv_;
  std::deque<module_version*> doomed_;  // under m
  bool reaper_started_ = false;         // under m
  uint64_t next_serial_ = 0;            // under m
};

// Load steps (loader.cpp). prepare runs on the blocking pool: read, check,
// stage, dlopen, check the descriptor and ABI, probe the factory. On success
// `out` is a version in state `loading` holding one reference (the loader's,
// which becomes the registry's "current" reference at commit).
modules::result<modules::loaded> prepare(const std::string& path, const std::string& dir, uint64_t max_size,
                                         module_version*& out);

// Inside a catch block: the current exception as "type: what", copied (so
// nothing of it points into module code once the block ends). loader.cpp.
std::string module_exception_text();

// Drops the loader's reference on a prepared version that will not be made
// current: it is dlclosed by the reaper. Any thread.
void abandon(module_version* v) noexcept;

}  // namespace herd::detail::code
