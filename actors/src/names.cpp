// Registered names. One map under a reader-writer lock: lookups (send to a
// name, whereis) share it; register/unregister and exits take it alone.
// An exit unpublishes the pid before it drops the name, and register checks
// the pid is still published under the lock, so a dead process never keeps a
// name. A name whose holder has left the table is free to register at once,
// not only after the holder's exit has dropped it: whoever saw the holder gone
// (a monitor's noproc DOWN, a failed lookup) can take the name without
// waiting on that exit's thread (an acceptor restart once found its names
// still held this way: listener_sup.cpp). The holder's own release then finds
// the entry held by another pid and leaves it.
#include <herd/actors/registry.hpp>
#include <herd/runtime/sched.hpp>
#include <herd/runtime/thread_safety.hpp>

#include "node_state.hpp"
#include "process.hpp"
#include "names.hpp"

#include <string>
#include <unordered_map>

namespace herd::detail {
namespace {

struct string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

struct registry_state {
  rt::shared_mutex m;
  std::unordered_map<std::string, pid, string_hash, std::equal_to<>> names HERD_GUARDED_BY(m);
};

registry_state& reg() {
  static registry_state r;
  return r;
}

void free_name(void* n) { delete static_cast<interned_name*>(n); }

}  // namespace

bool register_process(std::string_view name, process* p) {
  if (name.empty()) return false;
  registry_state& r = reg();
  rt::lock_guard<rt::shared_mutex> g(r.m);
  node_state* n = current_node();
  if (!n || n->table.lookup(p->id) != p) return false;
  if (p->name.load(std::memory_order_relaxed)) return false;
  auto [it, inserted] = r.names.try_emplace(std::string(name), p->id);
  if (!inserted) {
    rt::foreign_read_guard fg;  // the lookup reads the holder's control block
    if (n->table.lookup(it->second)) return false;  // held by a live process
    it->second = p->id;                              // its holder has left the table
  }
  p->name.store(new interned_name{std::string(name)}, std::memory_order_release);
  return true;
}

void release_name(process* p) noexcept {
  if (!p->name.load(std::memory_order_acquire)) return;
  registry_state& r = reg();
  rt::lock_guard<rt::shared_mutex> g(r.m);
  interned_name* in = p->name.exchange(nullptr, std::memory_order_acq_rel);
  if (!in) return;
  auto it = r.names.find(in->text);
  if (it != r.names.end() && it->second == p->id) r.names.erase(it);
  rt::retire(in, &free_name);
}

std::optional<pid> lookup_name(std::string_view name) {
  registry_state& r = reg();
  rt::shared_lock g(r.m);
  auto it = r.names.find(name);
  if (it == r.names.end()) return std::nullopt;
  return it->second;
}

}  // namespace herd::detail

namespace herd {

bool register_name(std::string_view name, pid p) {
  detail::node_state* n = detail::current_node();
  if (!n) return false;
  rt::foreign_read_guard g;
  detail::process* proc = n->table.lookup(p);
  return proc && detail::register_process(name, proc);
}

bool unregister_name(std::string_view name) {
  detail::registry_state& r = detail::reg();
  rt::lock_guard<rt::shared_mutex> g(r.m);
  auto it = r.names.find(name);
  if (it == r.names.end()) return false;
  pid id = it->second;
  r.names.erase(it);
  if (detail::node_state* n = detail::current_node()) {
    rt::foreign_read_guard fg;
    if (detail::process* p = n->table.lookup(id)) {
      if (detail::interned_name* in = p->name.exchange(nullptr, std::memory_order_acq_rel))
        rt::retire(in, &detail::free_name);
    }
  }
  return true;
}

std::optional<pid> whereis(std::string_view name) { return detail::lookup_name(name); }

std::optional<std::string> registered_name(pid p) {
  detail::node_state* n = detail::current_node();
  if (!n) return std::nullopt;
  // The shared lock keeps the name from being released (that takes it alone);
  // the read guard keeps the process's slot from being reused under us.
  detail::registry_state& r = detail::reg();
  rt::shared_lock g(r.m);
  rt::foreign_read_guard fg;
  detail::process* proc = n->table.lookup(p);
  if (!proc) return std::nullopt;
  detail::interned_name* in = proc->name.load(std::memory_order_acquire);
  if (!in) return std::nullopt;
  return in->text;
}

std::vector<std::pair<std::string, pid>> registered() {
  detail::registry_state& r = detail::reg();
  rt::shared_lock g(r.m);
  return {r.names.begin(), r.names.end()};
}

}  // namespace herd
