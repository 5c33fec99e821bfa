// Starting children, and the calls that add, stop, restart, delete and list
// them. Results follow OTP's supervisor:start_child/terminate_child/... .
#include <herd/actors/call.hpp>
#include <herd/actors/logger.hpp>
#include <herd/actors/receive.hpp>
#include <herd/actors/spawn.hpp>

#include "requests.hpp"
#include "state.hpp"

#include <algorithm>
#include <exception>
#include <utility>

namespace herd::supervisor::detail {

supervisor::error fail(errc e, std::string detail, pid p) { return supervisor::error{e, p, std::move(detail)}; }

// How long a supervisor child's start is waited for before it is taken as
// started anyway (a child declared a supervisor that never answers).
constexpr std::chrono::milliseconds init_wait{5000};

std::optional<std::string> start_one(state& s, child& c, early_exit e) {
  const child_spec& sp = *c.spec;
  spawn_options o;
  o.stack_size = sp.stack_size;
  o.name = sp.registered_name;
  o.prio = sp.prio;
  const bool is_sup = sp.type == child_type::supervisor;
  o.kind = is_sup ? process_kind::supervisor : sp.kind;
  o.initial_call = is_sup && !sp.initial_call ? "herd::supervisor" : sp.initial_call;
  try {
    c.id = sp.start.spawn_linked(o, c.args);
  } catch (const std::exception& ex) {
    c.id = no_pid;
    return std::string(ex.what());
  }
  c.restarting = false;
  // The child runs first, usually until its first blocking point: a name it
  // registers at once is there already. (One that died at once has none.)
  c.label = process_label(c.id);
  if (!sp.registered_name.empty() && c.label.find('(') == std::string::npos)
    c.label += " (" + sp.registered_name + ")";
  if (sp.type != child_type::supervisor) return std::nullopt;
  // A nested supervisor answers calls only from its receive loop, after its
  // init: this call returns once its whole subtree is started. (The spawn
  // alone does not say so: the parent may be stolen by another worker while
  // the child is still starting its own children.)
  std::optional<exit_reason> died;
  try {
    (void)call<child_counts>(c.id, req::count{}, init_wait);
  } catch (const call_error& err) {
    if (err.kind() == call_error::timeout) report_start_error(s, c, "no answer from its init within 5000 ms "
                                                                    "(not a herd supervisor?); taken as started");
    else died = err.reason();
  }
  if (!died || e == early_exit::keep) return std::nullopt;
  const pid p = c.id;
  herd::receive(when([p](const exit_msg& m) { return m.from == p; }, [](exit_msg&&) {}));  // linked: it comes
  c.id = no_pid;
  return "exited during its start: " + died->to_string();
}

std::optional<std::size_t> start_from(state& s, std::size_t from) {
  for (std::size_t i = from; i < s.children.size(); ++i) {
    child& c = s.children[i];
    if (c.running()) continue;
    if (auto why = start_one(s, c)) {
      report_start_error(s, c, *why);
      c.restarting = true;
      return i;
    }
  }
  return std::nullopt;
}

result<pid> handle_start_spec(state& s, child_spec spec) {
  if (s.simple())
    return fail(errc::bad_args, "a simple_one_for_one supervisor takes start_child arguments, not a child spec");
  if (spec.id.empty()) return fail(errc::invalid_spec, "the child spec has an empty id");
  if (!spec.start) return fail(errc::invalid_spec, "child \"" + spec.id + "\" has no start function");
  if (spec.start.args_type() != child_args().type())
    return fail(errc::invalid_spec, "child \"" + spec.id + "\": only simple_one_for_one children take arguments");
  if (std::ptrdiff_t i = s.index_of(spec.id); i >= 0) {
    const child& c = s.children[std::size_t(i)];
    if (c.running()) return fail(errc::already_started, {}, c.id);
    return fail(errc::already_present);
  }
  child c;
  c.key = s.next_key++;
  c.spec = std::make_shared<const child_spec>(std::move(spec));
  if (auto why = start_one(s, c, early_exit::fail)) return fail(errc::start_failed, *why);
  pid p = c.id;
  s.children.push_back(std::move(c));
  return p;
}

result<> handle_terminate(state& s, const std::string& id, pid p) {
  if (s.simple()) return dynamic_terminate(s, p);
  std::ptrdiff_t i = p.valid() ? s.index_of(p) : s.index_of(id);
  if (i < 0) return fail(errc::not_found);
  child& c = s.children[std::size_t(i)];
  if (c.running()) terminate_one(s, c);
  c.restarting = false;
  if (c.is_temporary()) s.children.erase(s.children.begin() + i);
  return herd::ok{};
}

result<pid> handle_restart(state& s, const std::string& id) {
  if (s.simple()) return fail(errc::simple_one_for_one);
  std::ptrdiff_t i = s.index_of(id);
  if (i < 0) return fail(errc::not_found);
  child& c = s.children[std::size_t(i)];
  if (c.running()) return fail(errc::running, {}, c.id);
  if (c.restarting) return fail(errc::restarting);
  if (auto why = start_one(s, c, early_exit::fail)) return fail(errc::start_failed, *why);
  return c.id;
}

result<> handle_delete(state& s, const std::string& id) {
  if (s.simple()) return fail(errc::simple_one_for_one);
  std::ptrdiff_t i = s.index_of(id);
  if (i < 0) return fail(errc::not_found);
  const child& c = s.children[std::size_t(i)];
  if (c.running()) return fail(errc::running, {}, c.id);
  if (c.restarting) return fail(errc::restarting);
  s.children.erase(s.children.begin() + i);
  return herd::ok{};
}

std::vector<const child*> dynamic_in_start_order(const state& s) {
  std::vector<const child*> all;
  all.reserve(s.dynamic.size() + s.dyn_waiting.size());
  for (const auto& [p, c] : s.dynamic) all.push_back(&c);
  for (const auto& [k, c] : s.dyn_waiting) all.push_back(&c);
  std::sort(all.begin(), all.end(), [](const child* a, const child* b) { return a->key < b->key; });
  return all;
}

std::vector<child_info> handle_which(const state& s) {
  std::vector<child_info> out;
  if (s.simple()) {
    const std::vector<const child*> all = dynamic_in_start_order(s);
    out.reserve(all.size());
    for (const child* c : all) out.push_back(child_info{{}, c->id, c->spec->type, c->restarting});
    return out;
  }
  out.reserve(s.children.size());
  for (const child& c : s.children) out.push_back(child_info{c.spec->id, c.id, c.spec->type, c.restarting});
  return out;
}

child_counts handle_count(const state& s) {
  child_counts n;
  if (s.simple()) {
    n.specs = 1;
    n.active = s.dynamic.size();
    std::size_t all = s.dynamic.size() + s.dyn_waiting.size();
    (s.dyn_spec->type == child_type::supervisor ? n.supervisors : n.workers) = all;
    return n;
  }
  n.specs = s.children.size();
  for (const child& c : s.children) {
    if (c.running()) ++n.active;
    ++(c.spec->type == child_type::supervisor ? n.supervisors : n.workers);
  }
  return n;
}

}  // namespace herd::supervisor::detail
