// herd::pg: OTP's process groups. A group is a name in a scope; processes
// join and leave it, and whoever wants can read its members, be told of
// joins and leaves, or send to all of them.
//
//   herd::pg::join("room:42", herd::self());
//   herd::pg::send("room:42", line{"hello"});          // every member, once per join
//   for (herd::pid p : herd::pg::get_members("room:42")) ...
//
// As in OTP: a process may join a group more than once and is then listed
// (and sent to) once per join, and must leave as often; a process that ends
// leaves every group at once; any process may join or leave other local
// processes. Unlike OTP a scope is not a process to start: it exists from
// its first use (the default is "pg"). Every call but the monitors works
// from any thread. While herd::dist runs, a scope is shared with the
// same-named scope of every connected node (BEAM's pg or herd's): other
// nodes' members are listed too (docs/distribution.md, "Process groups
// across nodes").
//
// get_members returns a snapshot shared by every reader until the group
// next changes: reading a group of 100,000 copies nothing per call, and the
// first read after a change makes the one copy. Design and the plan for
// scopes across nodes: docs/tables.md ("Process groups").
#pragma once
#include <herd/actors/links.hpp>
#include <herd/actors/pid.hpp>
#include <herd/actors/send.hpp>
#include <herd/tables/errors.hpp>

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace herd::pg {

inline constexpr std::string_view default_scope = "pg";

// A group's members when it was read: iterable, cheap to copy.
class members {
 public:
  members() = default;
  explicit members(std::shared_ptr<const std::vector<pid>> v) : v_(std::move(v)) {}
  const pid* begin() const noexcept { return v_ ? v_->data() : nullptr; }
  const pid* end() const noexcept { return v_ ? v_->data() + v_->size() : nullptr; }
  std::size_t size() const noexcept { return v_ ? v_->size() : 0; }
  bool empty() const noexcept { return size() == 0; }
  const pid& operator[](std::size_t i) const { return (*v_)[i]; }
  std::vector<pid> to_vector() const { return v_ ? *v_ : std::vector<pid>{}; }

 private:
  std::shared_ptr<const std::vector<pid>> v_;
};

// What a monitor of a scope or a group is sent on each change.
struct event {
  enum kind_t : uint8_t { join, leave };
  monitor_ref ref;
  kind_t kind;
  std::string group;
  std::vector<pid> pids;
};

// What monitor_scope / monitor return: the reference the events carry, and
// the state at the moment the monitor started (later changes come as events).
struct scope_monitor {
  monitor_ref ref;
  std::vector<std::pair<std::string, std::vector<pid>>> groups;
};
struct group_monitor {
  monitor_ref ref;
  std::vector<pid> members;
};

void join(std::string_view scope, std::string_view group, std::span<const pid> pids);
inline void join(std::string_view scope, std::string_view group, pid p) { join(scope, group, std::span(&p, 1)); }
inline void join(std::string_view group, pid p) { join(default_scope, group, p); }
inline void join(std::string_view group, std::span<const pid> pids) { join(default_scope, group, pids); }

// not_joined (an error value, as OTP's) when a pid was not in the group; the
// pids that were leave all the same.
tables::result<> leave(std::string_view scope, std::string_view group, std::span<const pid> pids);
inline tables::result<> leave(std::string_view scope, std::string_view group, pid p) {
  return leave(scope, group, std::span(&p, 1));
}
inline tables::result<> leave(std::string_view group, pid p) { return leave(default_scope, group, p); }

members get_members(std::string_view scope, std::string_view group);
inline members get_members(std::string_view group) { return get_members(default_scope, group); }
// This node's members only (get_members lists other nodes' too while
// distribution runs; without them this is get_members).
members get_local_members(std::string_view scope, std::string_view group);
inline members get_local_members(std::string_view group) { return get_members(default_scope, group); }

std::vector<std::string> which_groups(std::string_view scope = default_scope);

// The calling process is sent an event on every join and leave in the scope
// / the group, until demonitor or its end (outside a process: herd::
// not_in_process).
scope_monitor monitor_scope(std::string_view scope = default_scope);
group_monitor monitor(std::string_view scope, std::string_view group);
inline group_monitor monitor(std::string_view group) { return monitor(default_scope, group); }
// False if the reference was not a live monitor.
bool demonitor(std::string_view scope, monitor_ref ref);
inline bool demonitor(monitor_ref ref) { return demonitor(default_scope, ref); }

namespace detail {
// Groups the scope holds, members or monitors (an empty group goes): for
// tests and the observer.
std::size_t group_count(std::string_view scope);

// Distribution's seam (herd::dist keeps scopes in step across nodes).
// The hook is called (on the thread that made it, no lock held) for each
// scope made after it is set; returns the scopes that exist already.
using scope_hook = void (*)(std::string_view scope);
std::vector<std::string> set_scope_hook(scope_hook h);
// Other nodes' members, added and removed as their scope process says:
// listed by get_members and announced to monitors like local ones, but
// not watched for exit here.
void join_remote(std::string_view scope, std::string_view group, std::span<const pid> pids);
void leave_remote(std::string_view scope, std::string_view group, std::span<const pid> pids);
}  // namespace detail

// Sends a copy of msg to each member (once per join); how many were sent.
template <class T>
std::size_t send(std::string_view scope, std::string_view group, const T& msg) {
  members m = get_members(scope, group);
  for (pid p : m) herd::send(p, msg);
  return m.size();
}
template <class T>
std::size_t send(std::string_view group, const T& msg) {
  return send(default_scope, group, msg);
}

}  // namespace herd::pg
