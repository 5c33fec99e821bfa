// Process groups (herd/tables/pg.hpp).
//
// Each scope is a mutex over its groups; a group keeps its members in a
// member_list (detail/member_list.hpp: one entry per join, in no particular
// order, with an index pid -> its positions, so that a join and a leave are
// O(1) amortised: a million members can join and leave one by one), and a
// snapshot shared with readers, rebuilt by the
// first get_members after a change and dropped by the next change — so
// writers never copy and readers copy once per change, whatever the group's
// size. Joins and leaves take the scope's lock, then send the monitors'
// events after releasing it (sends never run under a lock).
//
// Members leave when they end, and a monitoring process's monitors go when
// it ends, through actors' exit watcher (no monitor per member): an index
// pid -> the groups it is in and the monitors it holds, under a lock of its
// own that is never held together with a scope's. The watcher is
// idempotent: it removes what the index still lists.
//
// Across nodes: while distribution runs, a process per scope (dist/src/
// pg_scope.cpp) exchanges this node's joins and leaves with the same-named
// scope on every connected node, as OTP's pg does. It learns of local
// changes as a scope monitor, and puts other nodes' members into the same
// lists (detail::join_remote / leave_remote), so get_members costs the same
// whether a group spans nodes or not; the hook below is called only when a
// scope is made.
#include <herd/actors/detail/exit_watch.hpp>
#include <herd/actors/process.hpp>
#include <herd/runtime/thread_safety.hpp>
#include <herd/tables/detail/member_list.hpp>
#include <herd/tables/pg.hpp>

#include <algorithm>
#include <map>
#include <unordered_map>

namespace herd::pg {
namespace {

struct watcher {
  monitor_ref ref;
  pid to;
};

struct group {
  detail::member_list members;                            // one entry per join
  std::shared_ptr<const std::vector<pid>> snapshot;       // null: rebuild on read
  std::vector<watcher> watchers;
  uint32_t remote = 0;  // entries of other nodes' processes (distribution)
};

struct scope {
  rt::mutex m;
  std::map<std::string, group, std::less<>> groups HERD_GUARDED_BY(m);
  std::vector<watcher> scope_watchers HERD_GUARDED_BY(m);
};

struct registry {
  rt::mutex m;
  std::map<std::string, std::unique_ptr<scope>, std::less<>> scopes HERD_GUARDED_BY(m);
  // pid -> (scope, group) once per join; the exit watcher's index
  std::unordered_multimap<pid, std::pair<scope*, std::string>> joined HERD_GUARDED_BY(m);
  // pid -> (scope, monitor) for each monitor it holds
  std::unordered_multimap<pid, std::pair<scope*, monitor_ref>> watching HERD_GUARDED_BY(m);
  // Distribution's: told of each scope made after it was set.
  detail::scope_hook on_new_scope HERD_GUARDED_BY(m) = nullptr;
};

registry& reg() {
  static registry* r = new registry;  // never destroyed: members end during static destruction
  return *r;
}

scope& scope_named(std::string_view name) {
  registry& r = reg();
  detail::scope_hook told = nullptr;
  scope* s = nullptr;
  {
    rt::lock_guard g(r.m);
    auto it = r.scopes.find(name);
    if (it == r.scopes.end()) {
      it = r.scopes.emplace(std::string(name), std::make_unique<scope>()).first;
      told = r.on_new_scope;  // only a new scope pays for the hook
    }
    s = it->second.get();  // scopes are never removed: the reference stays good
  }
  if (told) told(name);
  return *s;
}

struct outgoing {
  pid to;
  event ev;
};

void deliver(std::vector<outgoing>& out) {
  for (outgoing& o : out) herd::send(o.to, std::move(o.ev));
}

// The events a change sends: to the scope's monitors and the group's.
void notify(const scope& s, const group& gr, event::kind_t k, std::string_view name,
            const std::vector<pid>& pids, std::vector<outgoing>& out) HERD_REQUIRES(s.m) {
  for (const watcher& w : s.scope_watchers) out.push_back({w.to, event{w.ref, k, std::string(name), pids}});
  for (const watcher& w : gr.watchers) out.push_back({w.to, event{w.ref, k, std::string(name), pids}});
}

// Takes one entry of p out of gr (member_list: the last entry takes its
// place); false if p was not there.
bool take_one(group& gr, pid p) {
  if (!gr.members.take_one(p)) return false;
  gr.snapshot.reset();
  return true;
}

void member_ended(pid who, const exit_reason&) noexcept;

unsigned watcher_slot() {
  static const unsigned slot = herd::detail::register_exit_watcher(&member_ended);
  return slot;
}

// The monitoring process, or no_pid if ref was not there.
pid drop_watcher(std::vector<watcher>& ws, monitor_ref ref) {
  auto it = std::find_if(ws.begin(), ws.end(), [&](const watcher& w) { return w.ref == ref; });
  if (it == ws.end()) return no_pid;
  pid to = it->to;
  ws.erase(it);
  return to;
}

// A group with no member and no monitor goes, so that short-lived groups
// ("room:123") do not pile up; a reader's snapshot outlives it.
template <class It>
void prune(scope& s, It it) HERD_REQUIRES(s.m) {
  if (it->second.members.empty() && it->second.watchers.empty()) s.groups.erase(it);
}

pid drop_monitor(scope& s, monitor_ref ref) {
  rt::lock_guard g(s.m);
  if (pid to = drop_watcher(s.scope_watchers, ref)) return to;
  for (auto it = s.groups.begin(); it != s.groups.end(); ++it)
    if (pid to = drop_watcher(it->second.watchers, ref)) {
      prune(s, it);
      return to;
    }
  return no_pid;
}

void member_ended(pid who, const exit_reason&) noexcept {
  std::vector<std::pair<scope*, std::string>> was;
  std::vector<std::pair<scope*, monitor_ref>> watched;
  {
    registry& r = reg();
    rt::lock_guard g(r.m);
    auto [b, e] = r.joined.equal_range(who);
    for (auto it = b; it != e; ++it) was.push_back(it->second);
    r.joined.erase(who);
    auto [wb, we] = r.watching.equal_range(who);
    for (auto it = wb; it != we; ++it) watched.push_back(it->second);
    r.watching.erase(who);
  }
  for (auto& [s, ref] : watched) drop_monitor(*s, ref);
  std::vector<outgoing> out;
  try {
    for (auto& [s, name] : was) {
      rt::lock_guard g(s->m);
      auto it = s->groups.find(name);
      if (it == s->groups.end() || !take_one(it->second, who)) continue;
      notify(*s, it->second, event::leave, name, {who}, out);
      prune(*s, it);
    }
    deliver(out);
  } catch (...) {
    // out of memory while telling the monitors: the membership is right anyway
  }
}

}  // namespace

void join(std::string_view scope_name, std::string_view group_name, std::span<const pid> pids) {
  scope& s = scope_named(scope_name);
  unsigned slot = watcher_slot();
  std::vector<pid> live;
  // Mark first: a pid that has already ended is not joined (OTP would
  // monitor it and drop it at once).
  for (pid p : pids)
    if (herd::detail::watch_exit(p, slot)) live.push_back(p);
  if (live.empty()) return;
  {
    registry& r = reg();
    rt::lock_guard g(r.m);
    for (pid p : live) r.joined.emplace(p, std::make_pair(&s, std::string(group_name)));
  }
  std::vector<outgoing> out;
  {
    rt::lock_guard g(s.m);
    auto it = s.groups.find(group_name);
    if (it == s.groups.end()) it = s.groups.emplace(std::string(group_name), group{}).first;
    group& gr = it->second;
    gr.members.add(live);
    gr.snapshot.reset();
    notify(s, gr, event::join, group_name, live, out);
  }
  deliver(out);
  // A member that ended between its mark and the index entry: the watcher
  // found nothing to remove, so remove it here (watch_exit says it is gone).
  for (pid p : live)
    if (!herd::detail::watch_exit(p, slot)) member_ended(p, exit_reason::normal());
}

tables::result<> leave(std::string_view scope_name, std::string_view group_name, std::span<const pid> pids) {
  scope& s = scope_named(scope_name);
  std::vector<pid> gone;
  bool all = true;
  std::vector<outgoing> out;
  {
    rt::lock_guard g(s.m);
    auto it = s.groups.find(group_name);
    for (pid p : pids) {
      // another node's member leaves when its node says so, not here
      if (it != s.groups.end() && !p.is_remote() && take_one(it->second, p))
        gone.push_back(p);
      else
        all = false;
    }
    if (!gone.empty()) {
      notify(s, it->second, event::leave, group_name, gone, out);
      prune(s, it);
    }
  }
  {
    registry& r = reg();
    rt::lock_guard g(r.m);
    for (pid p : gone) {
      auto [b, e] = r.joined.equal_range(p);
      for (auto j = b; j != e; ++j)
        if (j->second.first == &s && j->second.second == group_name) {
          r.joined.erase(j);
          break;
        }
    }
  }
  deliver(out);
  if (!all) return tables::error{tables::errc::not_joined, std::string(group_name)};
  return {};
}

members get_members(std::string_view scope_name, std::string_view group_name) {
  scope& s = scope_named(scope_name);
  rt::lock_guard g(s.m);
  auto it = s.groups.find(group_name);
  if (it == s.groups.end()) return {};
  group& gr = it->second;
  if (!gr.snapshot) gr.snapshot = std::make_shared<const std::vector<pid>>(gr.members.pids());
  return members(gr.snapshot);
}

members get_local_members(std::string_view scope_name, std::string_view group_name) {
  {
    scope& s = scope_named(scope_name);
    rt::lock_guard g(s.m);
    auto it = s.groups.find(group_name);
    if (it == s.groups.end()) return {};
    if (it->second.remote != 0) {
      auto local = std::make_shared<std::vector<pid>>();
      for (pid p : it->second.members.pids())
        if (!p.is_remote()) local->push_back(p);
      return members(std::move(local));
    }
  }
  return get_members(scope_name, group_name);
}

std::size_t detail::group_count(std::string_view scope_name) {
  scope& s = scope_named(scope_name);
  rt::lock_guard g(s.m);
  return s.groups.size();
}

std::vector<std::string> which_groups(std::string_view scope_name) {
  scope& s = scope_named(scope_name);
  rt::lock_guard g(s.m);
  std::vector<std::string> out;
  for (auto& [name, gr] : s.groups)
    if (!gr.members.empty()) out.push_back(name);
  return out;
}

namespace {

// The calling process, indexed so that its monitors go when it ends.
pid watching_process(const char* call, scope& s, monitor_ref ref) {
  herd::detail::require_process(call);  // events are messages: someone must receive them
  pid me = herd::self();
  registry& r = reg();
  rt::lock_guard g(r.m);
  r.watching.emplace(me, std::make_pair(&s, ref));
  herd::detail::watch_exit(me, watcher_slot());  // we are alive
  return me;
}

// The index entry of one monitor, found by its process (not a scan of all).
void unindex_monitor(pid to, scope& s, monitor_ref ref) {
  registry& r = reg();
  rt::lock_guard g(r.m);
  auto [b, e] = r.watching.equal_range(to);
  for (auto it = b; it != e; ++it)
    if (it->second.first == &s && it->second.second == ref) {
      r.watching.erase(it);
      return;
    }
}

}  // namespace

scope_monitor monitor_scope(std::string_view scope_name) {
  scope& s = scope_named(scope_name);
  scope_monitor sm{herd::detail::new_ref(), {}};
  pid me = watching_process("herd::pg::monitor_scope", s, sm.ref);
  rt::lock_guard g(s.m);
  s.scope_watchers.push_back({sm.ref, me});
  for (auto& [name, gr] : s.groups)
    if (!gr.members.empty()) sm.groups.emplace_back(name, gr.members.pids());
  return sm;
}

group_monitor monitor(std::string_view scope_name, std::string_view group_name) {
  scope& s = scope_named(scope_name);
  group_monitor gm{herd::detail::new_ref(), {}};
  pid me = watching_process("herd::pg::monitor", s, gm.ref);
  rt::lock_guard g(s.m);
  auto it = s.groups.find(group_name);
  if (it == s.groups.end()) it = s.groups.emplace(std::string(group_name), group{}).first;
  it->second.watchers.push_back({gm.ref, me});
  gm.members = it->second.members.pids();
  return gm;
}

namespace detail {

std::vector<std::string> set_scope_hook(scope_hook h) {
  registry& r = reg();
  rt::lock_guard g(r.m);
  r.on_new_scope = h;
  std::vector<std::string> names;
  for (auto& [name, s] : r.scopes) names.push_back(name);
  return names;
}

// Other nodes' members are not indexed for the exit watcher (they are not
// processes of this node): distribution removes them when their node or
// scope says so, or when the connection goes.
void join_remote(std::string_view scope_name, std::string_view group_name, std::span<const pid> pids) {
  if (pids.empty()) return;
  scope& s = scope_named(scope_name);
  std::vector<outgoing> out;
  {
    rt::lock_guard g(s.m);
    auto it = s.groups.find(group_name);
    if (it == s.groups.end()) it = s.groups.emplace(std::string(group_name), group{}).first;
    group& gr = it->second;
    gr.members.add(pids);
    gr.remote += static_cast<uint32_t>(pids.size());
    gr.snapshot.reset();
    notify(s, gr, event::join, group_name, {pids.begin(), pids.end()}, out);
  }
  deliver(out);
}

void leave_remote(std::string_view scope_name, std::string_view group_name, std::span<const pid> pids) {
  scope& s = scope_named(scope_name);
  std::vector<pid> gone;
  std::vector<outgoing> out;
  {
    rt::lock_guard g(s.m);
    auto it = s.groups.find(group_name);
    if (it == s.groups.end()) return;
    gone = it->second.members.take(pids);
    if (gone.empty()) return;
    it->second.snapshot.reset();
    it->second.remote -= static_cast<uint32_t>(gone.size());
    notify(s, it->second, event::leave, group_name, gone, out);
    prune(s, it);
  }
  deliver(out);
}

}  // namespace detail

bool demonitor(std::string_view scope_name, monitor_ref ref) {
  scope& s = scope_named(scope_name);
  pid to = drop_monitor(s, ref);
  if (!to) return false;
  unindex_monitor(to, s, ref);
  return true;
}

}  // namespace herd::pg
