// Handlers made from modules (create, upgrade, destroy) and the host-side
// wrapper that lets a module's hibernate continuation hold a reference.
//
// The one rule here: a reference on a version is dropped only after the last
// instruction of its code that needed it has returned to host code — after the
// handler's destructor, after the continuation's destructor, after an
// exception thrown by module code has been copied into a module_error and
// destroyed.
#include <herd/actors/detail/body.hpp>
#include <herd/actors/module.hpp>
#include <herd/actors/process.hpp>
#include <herd/actors/send.hpp>

#include "code/module_registry.hpp"

#include <herd/runtime/thread_safety.hpp>
#include <new>

namespace herd::detail {

namespace {

using code::registry;

// Takes a reference on `name`'s current version for a new handler in this
// process. Throws module_error.
module_version* reserve_current(std::string_view name, uint64_t interface_id, std::string_view interface_name) {
  registry& r = registry::get();
  rt::lock_guard<rt::mutex> g(code::registry_mutex);
  auto it = r.table.find(name);
  if (it == r.table.end() || !it->second.current)
    throw module_error("module " + std::string(name) + " has no current version (not loaded)");
  module_version* v = it->second.current;
  if (v->interface_id != interface_id)
    throw module_error("module " + v->name + " " + v->version + " implements " + v->interface_name + ", not " +
                       std::string(interface_name));
  module_retain(v->anchor);  // the registry's reference keeps the count above zero
  if (pid me = herd::self(); me.valid()) v->actors.add(me);
  return v;
}

void unreserve(module_version* v, pid owner, bool watched = false) noexcept {
  {
    rt::lock_guard<rt::mutex> g(code::registry_mutex);
    registry::untrack_locked(v, owner);
    if (watched) registry::unwatch_locked(v, owner);
  }
  module_release(v->anchor);
}

// Calls the factory of v. On an exception, drops v's reservation (and the
// watcher entry, if `watched`) and throws module_error (after the module's
// exception object is gone).
handler* make(module_version* v, pid owner, const char* what, bool watched = false) {
  std::string failure;
  try {
    return v->desc->create();
  } catch (...) {
    failure = code::module_exception_text();
  }
  unreserve(v, owner, watched);
  throw module_error("module " + v->name + " " + v->version + ": " + what + " threw " + failure);
}

// A continuation made by module code: the module's body inside, the
// reference outside.
struct module_body final : body {
  module_body(body* i, module_anchor* a) noexcept : inner(i), owner(a) {}
  body* invoke() override { return inner->invoke(); }
  ~module_body() override {
    free_body(inner);        // module code: returns here
    module_release(owner);
  }
  body* inner;
  module_anchor* owner;
};

}  // namespace

handler_slot create_handler(std::string_view name, uint64_t interface_id, std::string_view interface_name) {
  module_version* v = reserve_current(name, interface_id, interface_name);
  pid me = herd::self();
  handler* h = make(v, me, "the factory");
  return handler_slot{h, v, &v->superseded, me};
}

void destroy_handler(handler_slot& s) noexcept {
  handler_slot t = std::exchange(s, {});
  delete t.h;  // the module's destructor; returns to host code
  unreserve(t.v, t.owner, t.watched);
}

void watch_handler(handler_slot& s) {
  if (!s.h || s.watched || !s.owner.valid()) return;
  bool superseded;
  {
    rt::lock_guard<rt::mutex> g(code::registry_mutex);
    s.v->watchers.add(s.owner);
    // Under the lock commit() marks a version old and copies its watchers:
    // either it sees us, or we see the flag.
    superseded = s.v->superseded.load(std::memory_order_relaxed);
  }
  s.watched = true;
  if (superseded) herd::send(s.owner, modules::code_changed{s.v->name});
}

// A switch to `nv` failed: counted on nv (list() shows it) and remembered in
// the slot so that this handler does not try nv again at every message.
void note_switch_failure(handler_slot& s, module_version* nv, const std::string& what) {
  s.refused = nv->serial;
  rt::lock_guard<rt::mutex> g(code::registry_mutex);
  ++nv->switch_failures;
  nv->last_switch_failure = what;
}

bool upgrade_handler(handler_slot& s) {
  module_version* ov = s.v;
  if (!s.h || !s.superseded->load(std::memory_order_relaxed) || ov->never_switch) return false;
  module_version* nv;
  pid me = herd::self();
  {
    registry& r = registry::get();
    rt::lock_guard<rt::mutex> g(code::registry_mutex);
    auto it = r.table.find(ov->name);
    nv = it == r.table.end() ? nullptr : it->second.current;
    if (!nv || nv == ov || nv->serial == s.refused || nv->interface_id != ov->interface_id ||
        !nv->upgrades_from(ov->version))
      return false;
    module_retain(nv->anchor);
    if (me.valid()) nv->actors.add(me);
    if (s.watched) nv->watchers.add(me);
  }
  // nv stays mapped while we hold its reference; the message is built
  // before it is dropped.
  auto fail = [&](std::string why) {
    std::string what = "module " + nv->name + " " + nv->version + ": " + why;
    note_switch_failure(s, nv, what);
    unreserve(nv, me, s.watched);
    throw module_error(what);
  };
  std::string failure;
  std::string state;
  try {
    state = s.h->export_state();
  } catch (...) {
    failure = "export_state of " + ov->version + " threw " + code::module_exception_text();
  }
  if (!failure.empty()) fail(std::move(failure));
  handler* nh = nullptr;
  try {
    nh = nv->desc->create();
  } catch (...) {
    failure = "the factory threw " + code::module_exception_text();
  }
  if (!failure.empty()) fail(std::move(failure));
  try {
    nh->code_change(ov->version, std::move(state));
  } catch (...) {
    failure = "code_change from " + ov->version + " threw " + code::module_exception_text();
  }
  if (!failure.empty()) {
    delete nh;
    fail(std::move(failure));
  }
  const bool watched = s.watched;
  destroy_handler(s);  // the old handler, then its reference
  s = handler_slot{nh, nv, &nv->superseded, me, watched};
  return true;
}

std::string_view handler_module(const handler_slot& s) noexcept {
  return s.v ? std::string_view(s.v->name) : std::string_view();
}

std::string_view handler_version(const handler_slot& s) noexcept {
  return s.v ? std::string_view(s.v->version) : std::string_view();
}

body* wrap_module_body(body* inner, module_anchor* a) {
  void* mem;
  try {
    mem = allocate_body(sizeof(module_body));
  } catch (...) {
    free_body(inner);
    throw;
  }
  module_retain(a);  // made by module code, which runs under a reference
  return new (mem) module_body(inner, a);
}

}  // namespace herd::detail
