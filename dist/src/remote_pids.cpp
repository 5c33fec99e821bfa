#include "remote_pids.hpp"

#include <herd/runtime/thread_safety.hpp>
#include <herd/actors/detail/remote.hpp>

#include "conn_links.hpp"

#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <tuple>

namespace herd::dist::detail {

namespace {

struct entry {
  uint32_t node_no;
  uint32_t id, serial, creation;
};

struct table {
  rt::shared_mutex mu;
  std::deque<std::string> node_names HERD_GUARDED_BY(mu);  // node_no - 1 -> name
  std::map<std::string, uint32_t, std::less<>> node_numbers HERD_GUARDED_BY(mu);
  std::deque<entry> entries HERD_GUARDED_BY(mu);  // index & ~remote_pid_bit -> entry
  std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>, uint32_t> by_key HERD_GUARDED_BY(mu);
};

table& the_table() {
  static table* t = new table;  // never destroyed: remote pids may be printed during exit
  return *t;
}

}  // namespace

// Installed once, for the OS process's life: a remote pid can be printed
// whenever one exists, and a send to one is dropped by hook_deliver while
// distribution does not run.
void install_remote_hooks() {
  static const herd::detail::remote_hooks hooks{&hook_deliver, &format_remote};
  static std::once_flag once;
  std::call_once(once, [] { herd::detail::set_remote_hooks(&hooks); });
  install_signal_hooks();
}

herd::pid intern_remote(const remote_pid& r) {
  install_remote_hooks();
  table& t = the_table();
  {
    rt::shared_lock g(t.mu);
    auto n = t.node_numbers.find(r.node);
    if (n != t.node_numbers.end()) {
      auto e = t.by_key.find({n->second, r.id, r.serial, r.creation});
      if (e != t.by_key.end()) return herd::pid{e->second | remote_pid_bit, 0};
    }
  }
  rt::lock_guard g(t.mu);
  auto n = t.node_numbers.find(r.node);
  uint32_t no;
  if (n == t.node_numbers.end()) {
    t.node_names.push_back(r.node);
    no = uint32_t(t.node_names.size());
    t.node_numbers.emplace(r.node, no);
  } else {
    no = n->second;
  }
  auto [it, fresh] = t.by_key.try_emplace({no, r.id, r.serial, r.creation}, uint32_t(t.entries.size()));
  if (fresh) t.entries.push_back(entry{no, r.id, r.serial, r.creation});
  return herd::pid{it->second | remote_pid_bit, 0};
}

std::optional<remote_pid> lookup_remote(herd::pid p) {
  if (!p.is_remote()) return std::nullopt;
  table& t = the_table();
  rt::shared_lock g(t.mu);
  uint32_t i = p.index & ~remote_pid_bit;
  if (i >= t.entries.size()) return std::nullopt;
  const entry& e = t.entries[i];
  return remote_pid{t.node_names[e.node_no - 1], e.id, e.serial, e.creation};
}

std::string format_remote(herd::pid p) {
  table& t = the_table();
  rt::shared_lock g(t.mu);
  uint32_t i = p.index & ~remote_pid_bit;
  char buf[48];
  int n = i < t.entries.size()
              ? std::snprintf(buf, sizeof buf, "<%u.%u.%u>", t.entries[i].node_no, t.entries[i].id,
                              t.entries[i].serial)
              : std::snprintf(buf, sizeof buf, "<remote.%u>", i);
  return std::string(buf, std::size_t(n));
}

}  // namespace herd::dist::detail
