// tree: every live supervisor, nested by who spawned whom. The children of
// each are asked of the supervisor itself (supervisors/introspect.hpp) by a
// short-lived helper process per supervisor — calls need a process, and
// asking all at once bounds the wait by the slowest one (busy_wait), not
// their sum. A supervisor that has not answered by then is shown with
// "busy": true and no children; a supervisor is nested inside the child
// entry of its parent that has its pid, and one not placed so is a root.
// A listener's conns_sup is not a herd supervisor: its helper asks it with
// net::connections_of, and its child entry gets "connections" (up to the
// cap, each with pid, peer and the kernel's view of the socket),
// "connections_total" and "truncated" — or "busy" if it did not answer.
#include "views.hpp"

#include <herd/actors/registry.hpp>
#include <herd/actors/spawn.hpp>
#include <herd/net/listener.hpp>
#include <herd/supervisors/introspect.hpp>

#include <chrono>
#include <herd/runtime/thread_safety.hpp>

#include <condition_variable>
#include <map>
#include <set>

namespace herd::observer {
namespace {

namespace sup = herd::supervisor;

constexpr std::size_t dynamic_cap = 1000;                 // the protocol's cap on listed children
constexpr std::chrono::milliseconds busy_wait{100};        // per supervisor, all asked at once
constexpr std::chrono::milliseconds collect_wait{busy_wait * 3};  // helpers still queued on busy workers

struct collector {
  rt::mutex m;
  std::condition_variable cv;
  std::size_t pending HERD_GUARDED_BY(m) = 0;
  std::map<pid, sup::tree_children> answers HERD_GUARDED_BY(m);
  std::map<pid, net::connections_listing> conns HERD_GUARDED_BY(m);
};

json connections_json(const net::connections_listing& c) {
  json rows = json::array();
  for (const net::connection_row& r : c.rows)
    rows.push_back({{"pid", r.pid.to_string()},
                    {"peer", r.peer},
                    {"tcp_state", r.tcp_state},
                    {"send_queue", r.send_queue},
                    {"recv_queue", r.recv_queue}});
  return {{"connections", std::move(rows)},
          {"connections_total", c.total},
          {"truncated", c.rows.size() < c.total}};
}

struct builder {
  std::map<pid, sup::registered_supervisor> sups;
  std::map<pid, sup::tree_children> answers;
  std::set<pid> placed;
  std::set<pid> conns_sups;  // every listener's
  std::map<pid, net::connections_listing> conns;

  json supervisor_node(const sup::registered_supervisor& s, std::size_t depth) {
    json j;
    j["pid"] = s.self.to_string();
    auto name = registered_name(s.self);
    j["name"] = name ? json(*name) : json(nullptr);
    j["kind"] = "supervisor";
    j["strategy"] = sup::to_string(s.strategy);
    j["intensity"] = s.intensity;
    j["period_ms"] = s.period.count();
    auto it = answers.find(s.self);
    json children = json::array();
    if (it == answers.end()) {
      j["busy"] = true;
    } else {
      for (const sup::tree_child& c : it->second.children) children.push_back(child_node(c, depth));
      if (it->second.more) j["more"] = it->second.more;
    }
    j["children"] = std::move(children);
    return j;
  }

  json child_node(const sup::tree_child& c, std::size_t depth) {
    json j;
    j["id"] = c.id ? json(*c.id) : json(nullptr);
    j["pid"] = pid_json(c.child);
    j["kind"] = sup::to_string(c.type);
    j["restart"] = sup::to_string(c.restart);
    // A registered worker shows its name (a listener's acceptors are
    // <listener>_acceptor_<n>); a supervisor's comes with its own fields below.
    if (c.child.valid())
      if (auto name = registered_name(c.child)) j["name"] = *name;
    if (c.child.valid() && conns_sups.count(c.child)) {
      auto it = conns.find(c.child);
      if (it == conns.end()) {
        j["busy"] = true;
      } else {
        json listed = connections_json(it->second);
        for (auto& [k, v] : listed.items()) j[k] = v;
      }
    }
    auto s = c.child.valid() ? sups.find(c.child) : sups.end();
    if (s != sups.end() && depth < 64 && placed.insert(c.child).second) {
      json inner = supervisor_node(s->second, depth + 1);
      for (auto& [k, v] : inner.items())
        if (k != "pid" && k != "kind") j[k] = v;
    }
    return j;
  }
};

}  // namespace

json tree_view() {
  std::vector<sup::registered_supervisor> live = sup::live_supervisors();
  std::vector<pid> conns_sups;
  for (const net::listener_info& l : net::listeners())
    if (l.conns_sup.valid()) conns_sups.push_back(l.conns_sup);
  auto col = std::make_shared<collector>();
  {
    rt::lock_guard<rt::mutex> g(col->m);  // not shared yet; the analysis asks for it
    col->pending = live.size() + conns_sups.size();
  }
  for (pid cs : conns_sups) {
    try {
      herd::spawn([col, cs] {
        auto ch = net::connections_of(cs, dynamic_cap, busy_wait);
        rt::lock_guard<rt::mutex> g(col->m);
        if (ch) col->conns.emplace(cs, std::move(*ch));
        --col->pending;
        col->cv.notify_all();
      });
    } catch (const std::exception&) {  // shows as busy
      rt::lock_guard<rt::mutex> g(col->m);
      --col->pending;
    }
  }
  for (auto& s : live) {
    try {
      herd::spawn([col, who = s.self] {
        auto ch = sup::children_of(who, dynamic_cap, busy_wait);
        rt::lock_guard<rt::mutex> g(col->m);
        if (ch) col->answers.emplace(who, std::move(*ch));
        --col->pending;
        col->cv.notify_all();
      });
    } catch (const std::exception&) {  // no process could be made: that one shows as busy
      rt::lock_guard<rt::mutex> g(col->m);
      --col->pending;
    }
  }
  builder b;
  {
    const auto until = std::chrono::steady_clock::now() + collect_wait;
    rt::unique_lock g(col->m);
    while (col->pending != 0)
      if (col->cv.wait_until(g.native(), until) == std::cv_status::timeout) break;
    b.answers = col->answers;  // a late helper still writes into col, which it shares
    b.conns = col->conns;
  }
  b.conns_sups.insert(conns_sups.begin(), conns_sups.end());
  for (auto& s : live) b.sups.emplace(s.self, s);
  // Roots: supervisors whose parent is not a live supervisor, first; then
  // any left unplaced (their parent did not answer, or listed past the cap).
  json roots = json::array();
  for (auto& s : live)
    if (!b.sups.count(s.parent) && b.placed.insert(s.self).second) roots.push_back(b.supervisor_node(s, 0));
  for (auto& s : live)
    if (!b.placed.count(s.self) && b.placed.insert(s.self).second) roots.push_back(b.supervisor_node(s, 0));
  return {{"roots", std::move(roots)}};
}

}  // namespace herd::observer
