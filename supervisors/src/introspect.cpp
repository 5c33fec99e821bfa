// The registry of live supervisors and the observer's children request (see
// <herd/supervisors/introspect.hpp> for why the tree is asked, not published).
// The registry is a map under a mutex touched twice per supervisor life (its
// init and its end) and once per observer look: never on a child's path.
#include <herd/runtime/thread_safety.hpp>
#include <herd/actors/call.hpp>
#include <herd/actors/process.hpp>
#include <herd/supervisors/introspect.hpp>

#include "introspect_impl.hpp"
#include "requests.hpp"
#include "state.hpp"

#include <algorithm>
#include <mutex>
#include <unordered_map>

namespace herd::supervisor {
namespace detail {
namespace {

herd::rt::mutex g_m;
std::unordered_map<pid, registered_supervisor>& registry() HERD_REQUIRES(g_m) {
  static std::unordered_map<pid, registered_supervisor> r;
  return r;
}

}  // namespace

registration::registration(const state& s) : self_(s.self) {
  registered_supervisor r{s.self, herd::parent(), s.fl.strategy, s.fl.intensity, s.fl.period};
  herd::rt::lock_guard<herd::rt::mutex> g(g_m);
  registry()[s.self] = r;
}

registration::~registration() {
  herd::rt::lock_guard<herd::rt::mutex> g(g_m);
  registry().erase(self_);
}

tree_children handle_tree(const state& s, std::size_t max) {
  tree_children out;
  auto add = [&](const child& c, bool dynamic) {
    if (out.children.size() >= max) {
      ++out.more;
      return;
    }
    tree_child t;
    if (!dynamic) t.id = c.spec->id;
    t.child = c.id;
    t.type = c.spec->type;
    t.restart = c.spec->restart;
    out.children.push_back(std::move(t));
  };
  if (s.simple()) {
    // In start order, as which_children lists them.
    for (const child* c : dynamic_in_start_order(s)) add(*c, true);
    return out;
  }
  for (const child& c : s.children) add(c, false);
  return out;
}

}  // namespace detail

const char* to_string(restart_type r) noexcept {
  switch (r) {
    case restart_type::permanent: return "permanent";
    case restart_type::transient: return "transient";
    case restart_type::temporary: return "temporary";
  }
  return "?";
}

const char* to_string(child_type t) noexcept { return t == child_type::supervisor ? "supervisor" : "worker"; }

std::vector<registered_supervisor> live_supervisors() {
  std::vector<registered_supervisor> out;
  {
    herd::rt::lock_guard<herd::rt::mutex> g(detail::g_m);
    out.reserve(detail::registry().size());
    for (auto& [p, r] : detail::registry()) out.push_back(r);
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.self < b.self; });
  return out;
}

result<tree_children> children_of(pid sup, std::size_t max, std::chrono::milliseconds timeout) {
  herd::detail::require_process("herd::supervisor::children_of");  // not a call_error: never an error value
  try {
    return herd::call<tree_children>(sup, detail::req::tree{max}, timeout);
  } catch (const herd::call_error& e) {  // a call's failure is an exception; here it is an answer
    return error{e.kind() == herd::call_error::timeout ? errc::timeout : errc::not_found, no_pid, e.what()};
  }
}

}  // namespace herd::supervisor
