// The module layer of hot code loading: herd's code server.
//
// Design
// ------
// A module is a shared object built by herd_add_module. It exports one C-ABI
// descriptor (`herd_module_descriptor_v1`: name, version, upgrade_from, ABI
// hash, interface, factory, anchor) and holds a hidden `module_anchor` whose
// atomic `refs` counts everything that still needs the module's code.
//
// Versions (module_version, one per dlopen) move through
//     loading -> current -> old -> unloading -> (dlclosed, forgotten)
// with `loading -> unloading` for a load that fails after dlopen. Per name the
// table holds at most one current and one old version, as Erlang does.
//
// References, and why they are cheap:
//  * The registry holds one reference on the current version (taken by the
//    loader, kept at commit, dropped when the version becomes old).
//  * A handler_ref holds one (create / upgrade take it under the lock, from
//    the current version, whose count is therefore above zero).
//  * Code that belongs to a module knows it statically: HERD_MODULE defines
//    the anchor hidden in the module, and every other component sees a weak,
//    hidden, undefined declaration that resolves to null
//    (module_anchor.hpp). make_message<T> instantiated in module code stores
//    the anchor in T's ops table and retains it; destroy_message (host code)
//    reads the owner before running the destructor and releases it after. A
//    host message pays one load and a never-taken branch on each side.
//    send_after's closure is such a message. A hibernate continuation made by
//    module code is wrapped in a host-side body (handlers.cpp) that releases
//    after the module's destructor has returned.
//  * module_retain is relaxed: the caller already runs under a reference
//    (module code executes only inside a handler call, a message destructor,
//    a continuation, or the loader's probe), so the count cannot be at zero
//    concurrently — shared_ptr's argument. module_release is acq_rel: every
//    use of the code happens-before the thread that sees the count reach
//    zero, which then hands the version to the reaper through the mutex.
//  * Zero is final: once a version is not current, only holders of a
//    reference can make new ones. The thread that brings it to zero calls
//    registry::unreferenced, which queues the dlclose.
//
// Unloading: a reaper thread (started on first use, one per process) runs
// dlclose, checks with RTLD_NOLOAD that the copy is really gone, unlinks the
// staged file and forgets the version. It is a dedicated thread rather than
// herd's blocking pool because the last reference can be dropped anywhere —
// a worker outside any process (a timer's drop), a foreign thread, node
// teardown — and the runtime offers no fire-and-forget submission to its pool.
//
// Loading (load): the file work, ELF inspection, dlopen and checks run in
// `prepare` on the blocking pool (loader.cpp); `commit` then runs in the
// calling process under the lock: refused if an old version is still
// referenced (soft purge), or its actors are killed and waited for (purge),
// then the new version becomes current and the previous one old, dropping
// the registry's reference on it (which unloads it at once if nothing else
// holds it). Every failure leaves the table as it was. The owners of the
// previous version's watched handlers (handler_ref::watch) then get a
// modules::code_changed, sent after the lock is dropped: an owner asleep in
// hibernate or an idle receive wakes and upgrades, so idling does not pin a
// version (the connection loop of net::protocol watches its handler).
//
// Invariants
//  * A version's code is mapped while anchor->refs > 0 or it is loading.
//  * table[n].current, if any, is in state current and holds one reference;
//    table[n].old, if any, is in state old and has refs > 0 (at zero it is
//    moved to unloading under the same lock).
//  * The mutex is never held across a suspension, a send or module code.
#include "code/registry.hpp"

#include <herd/actors/process.hpp>
#include <herd/actors/module.hpp>
#include <herd/actors/send.hpp>

#include "code/staging.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace herd::detail {

void module_retain(module_anchor* a) noexcept { a->refs.fetch_add(1, std::memory_order_relaxed); }

void module_release(module_anchor* a) noexcept {
  // Read before the decrement: after it, another holder may drop the last
  // reference and the anchor (module memory) may be unmapped.
  void* v = a->version.load(std::memory_order_acquire);  // pairs with the loader's release store
  // acq_rel: see the design notes above.
  if (a->refs.fetch_sub(1, std::memory_order_acq_rel) == 1 && v)
    code::registry::get().unreferenced(static_cast<module_version*>(v));
}

namespace code {

registry& registry::get() {
  static registry* r = new registry;  // never destroyed, see the declaration
  return *r;
}

module_version* registry::add_loading(const std::string& path, const std::string& dir, const std::string& stem,
                                      const std::string& hash) {
  auto v = std::make_unique<module_version>();
  v->path = path;
  std::lock_guard<std::mutex> g(m);
  v->serial = ++next_serial_;
  // dlopen of a path already loaded returns that copy: never reuse the name
  // of a live version (current, old, or queued for dlclose).
  std::string name = stem + "." + hash + ".so";
  for (unsigned n = 2;; ++n) {
    std::string p = dir + "/" + name;
    bool used = std::any_of(versions.begin(), versions.end(), [&](auto& o) { return o->staged_path == p; });
    if (!used) {
      v->staged_path = p;
      break;
    }
    name = stem + "." + hash + "." + std::to_string(n) + ".so";
  }
  versions.push_back(std::move(v));
  return versions.back().get();
}

void registry::discard(module_version* v) noexcept {
  ::unlink(v->staged_path.c_str());
  std::lock_guard<std::mutex> g(m);
  std::erase_if(versions, [&](auto& o) { return o.get() == v; });
}

void registry::untrack_locked(module_version* v, pid p) noexcept {
  if (!p.valid()) return;
  v->actors.remove(p);
}

void registry::unwatch_locked(module_version* v, pid p) noexcept {
  v->watchers.remove(p);
}

void registry::unreferenced(module_version* v) noexcept {
  std::lock_guard<std::mutex> g(m);
  if (v->state == version_state::current) {
    // Cannot happen (current holds a reference); keep it loaded rather than
    // unmap code that may run.
    std::fprintf(stderr, "herd: module %s %s: reference count reached zero while current\n", v->name.c_str(),
                 v->version.c_str());
    return;
  }
  if (auto it = table.find(v->name); it != table.end() && it->second.old == v) it->second.old = nullptr;
  v->state = version_state::unloading;
  v->superseded.store(true, std::memory_order_relaxed);
  doomed_.push_back(v);
  if (!reaper_started_) {
    reaper_started_ = true;
    std::thread([this] { reaper_main(); }).detach();  // lives as long as the process
  }
  cv_.notify_one();
}

void registry::reaper_main() {
  // Not named after the worker that started it (tools count workers by name).
  pthread_setname_np(pthread_self(), "herd-reaper");
  std::unique_lock<std::mutex> g(m);
  for (;;) {
    cv_.wait(g, [&] { return !doomed_.empty(); });
    module_version* v = doomed_.front();
    doomed_.pop_front();
    // The anchor and descriptor live in the module: nobody may read them
    // once it is closed (list() and commit() look at anchors under m).
    v->anchor = nullptr;
    v->desc = nullptr;
    g.unlock();
    void* dl = v->dl;
    v->dl = nullptr;
    if (dl && ::dlclose(dl) != 0) {
      const char* e = ::dlerror();
      std::fprintf(stderr, "herd: module %s %s: dlclose: %s\n", v->name.c_str(), v->version.c_str(), e ? e : "?");
    } else if (dl) {
      if (void* again = ::dlopen(v->staged_path.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
        ::dlclose(again);
        std::fprintf(stderr,
                     "herd: module %s %s stayed mapped after dlclose (something else holds it: another "
                     "dlopen of the copy, or a dependency marked it NODELETE)\n",
                     v->name.c_str(), v->version.c_str());
      }
    }
    ::unlink(v->staged_path.c_str());
    g.lock();
    std::erase_if(versions, [&](auto& o) { return o.get() == v; });
  }
}

void abandon(module_version* v) noexcept { module_release(v->anchor); }

namespace {

modules::error err(modules::errc c, std::string msg) { return {c, std::move(msg)}; }

void pause_1ms() {
  if (herd::self().valid()) herd::sleep(std::chrono::milliseconds(1));
  else ::usleep(1000);
}

// Makes `nv` (nullptr: none) the current version of `name` under the purge
// rules. From a process (a purge sleeps in it) or a foreign thread. Takes
// over the loader's reference on nv: kept if it becomes current, dropped if
// not.
modules::result<modules::loaded> commit(module_version* nv, const std::string& name, const modules::load_options& o) {
  registry& r = registry::get();
  bool killed = false;
  for (;;) {
    std::unique_lock<std::mutex> g(r.m);
    auto it = r.table.find(name);
    if (!nv && (it == r.table.end() || !it->second.current))
      return err(modules::errc::no_such_module, "module " + name + " has no current version");
    entry& e = r.table[name];
    if (module_version* old = e.old) {
      std::string what = "module " + name + ": old version " + old->version + " is still in use (" +
                         std::to_string(old->anchor->refs.load(std::memory_order_relaxed)) + " references, " +
                         std::to_string(old->actors.size()) + " handlers in processes)";
      if (o.purge == modules::purge_mode::soft) {
        g.unlock();
        if (nv) abandon(nv);
        return err(modules::errc::old_version_in_use, what + "; load with purge_mode::kill to kill them");
      }
      if (killed) {
        g.unlock();
        if (nv) abandon(nv);
        return err(modules::errc::purge_timeout, what + " " + std::to_string(o.purge_timeout.count()) +
                                                          " ms after its actors were killed");
      }
      std::vector<pid> victims = old->actors.distinct();
      g.unlock();
      // code:purge: kill the processes running the old code (not ourselves).
      std::sort(victims.begin(), victims.end());
      victims.erase(std::unique(victims.begin(), victims.end()), victims.end());
      for (pid p : victims)
        if (p != herd::self()) herd::exit(p, exit_reason::kill());
      auto deadline = std::chrono::steady_clock::now() + o.purge_timeout;
      for (;;) {
        {
          std::lock_guard<std::mutex> g2(r.m);
          if (r.table[name].old != old) break;
        }
        if (std::chrono::steady_clock::now() >= deadline) break;
        pause_1ms();
      }
      killed = true;
      continue;
    }
    module_version* prev = e.current;
    e.current = nv;
    if (nv) nv->state = version_state::current;
    std::vector<pid> watchers;
    if (prev) {
      prev->state = version_state::old;
      prev->superseded.store(true, std::memory_order_relaxed);
      e.old = prev;
      watchers = prev->watchers.distinct();  // see watch_handler (handlers.cpp)
    }
    modules::loaded ok{name, prev ? prev->version : ""};
    if (nv) ok = {nv->name, nv->version};
    g.unlock();
    // sys:change_code for idle owners: a hibernated one wakes, upgrades and
    // sleeps again, instead of keeping prev loaded until its next message.
    for (pid p : watchers) herd::send(p, modules::code_changed{name});
    if (prev) module_release(prev->anchor);  // the registry's "current" reference
    return ok;
  }
}

}  // namespace
}  // namespace code
}  // namespace herd::detail

namespace herd::modules {

using detail::code::registry;

void set_module_dir(std::string dir) {
  // Absolute now, against today's working directory: load resolves relative
  // paths against it, and a path built from module_dir() must not change
  // meaning if the working directory does.
  if (!dir.empty() && dir[0] != '/') {
    std::error_code ec;
    std::filesystem::path abs = std::filesystem::absolute(dir, ec);
    if (!ec) dir = abs.lexically_normal().string();
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  }
  registry& r = registry::get();
  std::lock_guard<std::mutex> g(r.m);
  r.module_dir = std::move(dir);
}

std::string module_dir() {
  registry& r = registry::get();
  std::lock_guard<std::mutex> g(r.m);
  return r.module_dir;
}

result<loaded> load(const std::string& path, const load_options& o) {
  // Released if this process is killed while it waits for the blocking pool.
  struct pending {
    detail::module_version* v = nullptr;
    ~pending() {
      if (v) detail::code::abandon(v);
    }
  } p;
  std::string dir = module_dir();
  result<loaded> r = herd::blocking([&] { return detail::code::prepare(path, dir, o.max_file_size, p.v); });
  if (!r) return r;
  detail::module_version* v = std::exchange(p.v, nullptr);
  return detail::code::commit(v, v->name, o);
}

result<loaded> unload(const std::string& name, const load_options& o) { return detail::code::commit(nullptr, name, o); }

std::vector<version_info> list() {
  registry& r = registry::get();
  std::lock_guard<std::mutex> g(r.m);
  std::vector<version_info> out;
  for (auto& v : r.versions) {
    version_info i;
    i.name = v->name;
    i.version = v->version;
    i.state = detail::to_string(v->state);
    i.path = v->path;
    i.staged_path = v->staged_path;
    i.upgrade_from = v->upgrade_from;
    i.never_switch = v->never_switch;
    i.refs = v->anchor ? v->anchor->refs.load(std::memory_order_relaxed) : 0;
    i.actors = v->actors.entries();
    i.switch_failures = v->switch_failures;
    i.last_switch_failure = v->last_switch_failure;
    out.push_back(std::move(i));
  }
  return out;
}

}  // namespace herd::modules
