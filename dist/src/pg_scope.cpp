// herd::pg scopes kept in step with the same-named scope on every connected
// node, speaking OTP 25 pg's messages (kernel/src/pg.erl), so that BEAM and
// herd processes join the same groups:
//   - on start and on each nodeup, {discover, Self} to {Scope, Node};
//   - to a {discover, Peer}: {'$gen_cast', {sync, Self, [{Group, Pids}]}}
//     with this node's members, and {discover, Self} back to an unknown
//     Peer;
//   - a sync replaces what the peer had; {join, Peer, Group, Pids} and
//     {leave, Peer, Pids, Groups} change it; this node's joins and leaves
//     go to every peer the same way;
//   - a peer's node going down removes its members.
// BEAM's scope crashes on a message it does not expect (its handle_info's
// catch-all is badarg), so only these shapes are ever sent to a peer.
//
// The scope process learns of this node's joins and leaves as a pg scope
// monitor (herd::pg::monitor_scope), so the join/leave paths of herd::pg
// carry no distribution code; other nodes' members go into the same lists
// (pg::detail::join_remote), which keeps get_members as cheap as before.
//
// Group names: a herd group is a string; on the wire it is an Erlang
// binary. A group another node names with an atom, a charlist or another
// term is listed here under its text (the atom's name, the string) or its
// printed form ({chat,42}); herd's own joins always go out as binaries.
//
// Each peer scope is monitored (as pg does): its DOWN — the scope process
// ending while its node stays up, or noconnection — drops its members; a
// nodedown does the same for every peer on that node at once. A new peer
// on a node replaces the one still listed there, and one on a node no
// longer connected is not taken (add_peer: a peer's herd::pid changes when
// its connection's pids are swept, before the nodedown is sent).
#include <herd/actors/links.hpp>
#include <herd/actors/logger.hpp>
#include <herd/actors/process.hpp>
#include <herd/actors/receive.hpp>
#include <herd/actors/registry.hpp>
#include <herd/actors/send.hpp>
#include <herd/actors/spawn.hpp>
#include <herd/dist/term.hpp>
#include <herd/dist/term_codec.hpp>
#include <herd/tables/detail/member_list.hpp>
#include <herd/tables/pg.hpp>

#include <algorithm>
#include <map>

#include "pg_scope.hpp"
#include "remote_pids.hpp"
#include "state.hpp"

namespace herd::dist::detail {

namespace {

struct scope_made {
  std::string name;
};
struct pg_stop {};

// One entry per join, with O(1) leaves: a group of a million members may
// leave one by one (a linear search per leave made that quadratic).
using group_map = std::map<std::string, herd::pg::detail::member_list, std::less<>>;

void log(const std::string& s) { herd::log_report("herd::pg: " + s); }

std::optional<herd::term> pid_term(herd::pid p) {
  auto d = describe(p);
  if (!d) return std::nullopt;
  auto node = herd::atom::make(d->node);
  if (!node) return std::nullopt;
  return herd::term::pid(herd::erl_pid{*node, d->id, d->serial, d->creation});
}

// A peer's pid, counted against the connection it came by (`origin`, 0 for
// none) as as<T>() counts it: past max_remote_pids_per_connection, no_pid.
herd::pid from_term(const herd::term& t, uint32_t origin) {
  const herd::erl_pid& p = t.as_pid();
  pid_charge_scope charge(origin);
  return intern(remote_pid{std::string(p.node.text()), p.id, p.serial, p.creation});
}

std::string group_name(const herd::term& g) {
  if (g.is_atom()) return std::string(g.as_atom().text());
  if (auto text = g.to_text()) return *text;
  return herd::to_string(g);
}

// A pid or a list of pids (pg sends either) of other nodes: anything else,
// this node's pids too (a peer lists only its own), is skipped.
std::vector<herd::pid> pids_of(const herd::term& t, uint32_t origin) {
  std::vector<herd::pid> out;
  auto add = [&](const herd::term& e) {
    if (!e.is_pid()) return;
    herd::pid p = from_term(e, origin);
    if (p.is_remote()) out.push_back(p);
  };
  if (t.is_proper_list())
    for (const herd::term& e : t.elements()) add(e);
  else add(t);
  return out;
}

class scope_sync {
 public:
  explicit scope_sync(std::string name) : name_(std::move(name)) {}
  ~scope_sync() { leave_all(); }  // also when unwound: other nodes' members must not stay listed

  void run() {
    auto me = pid_term(herd::self());
    if (!me) return;  // distribution stopped meanwhile
    me_ = *me;
    if (!herd::register_name(name_, herd::self())) {
      log("scope \"" + name_ + "\" is not shared with other nodes: its name is registered to another process");
      herd::receive([](const pg_stop&) {});
      return;
    }
    registered_ = true;
    herd::dist::monitor_nodes(true);
    watching_ = true;
    auto mon = herd::pg::monitor_scope(name_);
    mon_ = mon.ref;
    for (auto& [group, pids] : mon.groups)
      for (herd::pid p : pids)
        if (!p.is_remote()) local_[group].add(p);
    std::string hello = herd::term_to_binary(herd::term::tuple({herd::atom("discover"), me_}));
    for (const std::string& n : herd::dist::nodes()) herd::dist::send(name_, n, hello);
    for (bool more = true; more;)
      herd::receive([&](herd::pg::event& e) { local_change(e); },
                    [&](herd::dist::etf_message& m) { from_peer(m); },
                    [&](const herd::dist::nodeup& u) { herd::dist::send(name_, u.node, hello); },
                    [&](const herd::dist::nodedown& d) { node_down(d.node); },
                    [&](const herd::down& d) { peer_down(d.ref); },
                    [&](const pg_stop&) { more = false; });
  }

 private:
  void local_change(herd::pg::event& e) {
    if (e.ref != mon_) return;
    std::vector<herd::pid> ours;
    for (herd::pid p : e.pids)
      if (!p.is_remote()) ours.push_back(p);
    if (ours.empty()) return;  // another node's members, which we put there
    herd::term group = herd::term::binary(e.group);
    if (e.kind == herd::pg::event::join) {
      local_[e.group].add(ours);
      broadcast(herd::term::tuple({herd::atom("join"), me_, group, pid_list(ours)}));
    } else {
      auto it = local_.find(e.group);
      if (it != local_.end()) {
        it->second.take(ours);
        if (it->second.empty()) local_.erase(it);
      }
      broadcast(herd::term::tuple({herd::atom("leave"), me_, pid_list(ours), herd::term::list({group})}));
    }
  }

  herd::term pid_list(const std::vector<herd::pid>& pids) const {
    std::vector<herd::term> ts;
    ts.reserve(pids.size());
    for (herd::pid p : pids)
      if (auto t = pid_term(p)) ts.push_back(std::move(*t));
    return herd::term::list(std::move(ts));
  }

  void broadcast(const herd::term& msg) {
    if (peers_.empty()) return;
    std::string bytes = herd::term_to_binary(msg);
    for (auto& [peer, _] : peers_) herd::dist::send(peer, bytes);
  }

  void from_peer(const herd::dist::etf_message& m) {
    from_peer_terms(m);
    // Pids past the sender's cap were skipped: its connection closes (once).
    close_if_pids_spent(m.origin);
  }

  void from_peer_terms(const herd::dist::etf_message& m) {
    const uint32_t o = m.origin;
    auto t = m.term();
    if (!t || !t->is_tuple() || t->size() < 2 || !(*t)[0].is_atom()) return;
    const herd::term& msg = *t;
    std::string_view tag = msg[0].as_atom().text();
    if (tag == "discover" && msg.size() == 2 && msg[1].is_pid()) {
      herd::pid peer = from_term(msg[1], o);
      if (peer.valid()) discovered(peer, std::string(msg[1].as_pid().node.text()));
    } else if (tag == "$gen_cast" && msg.size() == 2 && msg[1].is_tuple() && msg[1].size() == 3 &&
               msg[1][0].is_atom(herd::atom("sync")) && msg[1][1].is_pid()) {
      synced(msg[1][1], msg[1][2], o);
    } else if (tag == "join" && msg.size() == 4 && msg[1].is_pid()) {
      auto peer = peers_.find(from_term(msg[1], o));
      if (peer == peers_.end()) return;  // as pg: only a known peer's joins count
      std::vector<herd::pid> pids = pids_of(msg[3], o);
      std::string group = group_name(msg[2]);
      peer->second.groups[group].add(pids);
      herd::pg::detail::join_remote(name_, group, pids);
    } else if (tag == "leave" && msg.size() == 4 && msg[1].is_pid() && msg[3].is_proper_list()) {
      auto peer = peers_.find(from_term(msg[1], o));
      if (peer == peers_.end()) return;
      std::vector<herd::pid> pids = pids_of(msg[2], o);
      for (const herd::term& g : msg[3].elements()) {
        auto it = peer->second.groups.find(group_name(g));
        if (it == peer->second.groups.end()) continue;
        herd::pg::detail::leave_remote(name_, it->first, it->second.take(pids));
        if (it->second.empty()) peer->second.groups.erase(it);
      }
    }
  }

  void discovered(herd::pid peer, std::string node) {
    std::vector<herd::term> groups;
    for (auto& [group, pids] : local_)
      if (!pids.empty()) groups.push_back(herd::term::tuple({herd::term::binary(group), pid_list(pids.pids())}));
    herd::term sync = herd::term::tuple({herd::atom("sync"), me_, herd::term::list(std::move(groups))});
    herd::dist::send(peer, herd::term_to_binary(herd::term::tuple({herd::atom("$gen_cast"), sync})));
    if (peers_.count(peer) || !add_peer(peer, std::move(node))) return;
    herd::dist::send(peer, herd::term_to_binary(herd::term::tuple({herd::atom("discover"), me_})));
  }

  // The peer's whole membership: what it had before is replaced.
  void synced(const herd::term& peer_term, const herd::term& groups, uint32_t origin) {
    if (!groups.is_proper_list()) return;
    herd::pid peer = from_term(peer_term, origin);
    if (!peer.valid()) return;
    auto it = peers_.find(peer);
    if (it == peers_.end()) {
      if (!add_peer(peer, std::string(peer_term.as_pid().node.text()))) return;
      it = peers_.find(peer);
    }
    group_map now;
    for (const herd::term& g : groups.elements())
      if (g.is_tuple() && g.size() == 2) {
        now[group_name(g[0])].add(pids_of(g[1], origin));
      }
    group_map& before = it->second.groups;
    for (auto& [group, pids] : before) {
      auto n = now.find(group);
      if (n != now.end() && n->second.pids() == pids.pids()) continue;
      herd::pg::detail::leave_remote(name_, group, pids.pids());
    }
    for (auto& [group, pids] : now) {
      auto b = before.find(group);
      if (b != before.end() && b->second.pids() == pids.pids()) continue;
      herd::pg::detail::join_remote(name_, group, pids.pids());
    }
    before = std::move(now);
  }

  // A peer not seen before, on a node still connected (a message read
  // before its connection ended may be taken after: its node's nodedown is
  // on the way). A node runs one scope of a name, so a peer still listed on
  // the same node is gone: a restarted scope's DOWN has come first, and a
  // message taken after its connection's pids were swept names the same
  // scope under a new herd::pid (remote_pids.hpp) — its members must not be
  // added on top of their own old entries.
  bool add_peer(herd::pid peer, std::string node) {
    auto up = herd::dist::nodes();
    if (std::find(up.begin(), up.end(), node) == up.end()) return false;
    node_down(node);
    peers_.emplace(peer, peer_state{std::move(node), {}, herd::monitor(peer)});
    return true;
  }

  void node_down(const std::string& node) {
    for (auto it = peers_.begin(); it != peers_.end();) {
      if (it->second.node == node) it = drop_peer(it);
      else ++it;
    }
  }

  void peer_down(herd::monitor_ref ref) {
    for (auto it = peers_.begin(); it != peers_.end(); ++it)
      if (it->second.mon == ref) {
        drop_peer(it);
        return;
      }
  }

  // The peer is gone: its members leave.
  template <class It>
  It drop_peer(It it) {
    herd::demonitor(it->second.mon);
    for (auto& [group, pids] : it->second.groups) herd::pg::detail::leave_remote(name_, group, pids.pids());
    return peers_.erase(it);
  }

  void leave_all() noexcept {
    try {
      for (auto it = peers_.begin(); it != peers_.end();) it = drop_peer(it);
      if (watching_) herd::dist::monitor_nodes(false);
      if (mon_) herd::pg::demonitor(name_, mon_);
      if (registered_) herd::unregister_name(name_);
    } catch (...) {
    }
  }

  struct peer_state {
    std::string node;
    group_map groups;  // its members, one entry per join
    herd::monitor_ref mon;  // on the peer's scope process
  };

  std::string name_;
  herd::term me_;
  bool registered_ = false, watching_ = false;
  herd::monitor_ref mon_{};
  group_map local_;  // this node's members, one entry per join
  std::map<herd::pid, peer_state> peers_;
};

// Called by herd::pg when a scope is made (any thread, no lock held).
void scope_made_hook(std::string_view scope) {
  herd::pid to;
  {
    rt::lock_guard g(state().mu);
    to = state().pg_sync;
  }
  if (to) herd::send(to, scope_made{std::string(scope)});
}

void pg_sync_main() {
  std::map<std::string, herd::pid, std::less<>> scopes;
  auto start = [&](const std::string& name) {
    if (!scopes.count(name)) scopes.emplace(name, herd::spawn([name] { scope_sync(name).run(); }));
  };
  for (const std::string& name : herd::pg::detail::set_scope_hook(&scope_made_hook)) start(name);
  for (bool more = true; more;)
    herd::receive([&](const scope_made& m) { start(m.name); }, [&](const pg_stop&) { more = false; });
  herd::pg::detail::set_scope_hook(nullptr);
  std::vector<herd::monitor_ref> refs;
  for (auto& [name, p] : scopes) {
    refs.push_back(herd::monitor(p));
    herd::send(p, pg_stop{});
  }
  for (std::size_t left = refs.size(); left > 0;)
    herd::receive(herd::when([&](const herd::down& d) { return std::find(refs.begin(), refs.end(), d.ref) != refs.end(); },
                             [&](const herd::down&) { --left; }),
                  herd::after(std::chrono::seconds(10), [&] { left = 0; }));
}

}  // namespace

void start_pg_sync() {
  stop_pg_sync();  // one left by a distribution that ended without stop()
  // Spawned under the lock: the hook it installs must find it.
  rt::lock_guard g(state().mu);
  state().pg_sync = herd::spawn(pg_sync_main);
}

void stop_pg_sync() {
  herd::pid p;
  {
    rt::lock_guard g(state().mu);
    p = state().pg_sync;
    state().pg_sync = herd::no_pid;
  }
  if (!p) return;
  herd::monitor_ref r = herd::monitor(p);
  herd::send(p, pg_stop{});
  herd::receive(herd::when([&](const herd::down& d) { return d.ref == r; }, [](const herd::down&) {}),
                herd::after(std::chrono::seconds(15), [] {}));
}

}  // namespace herd::dist::detail
