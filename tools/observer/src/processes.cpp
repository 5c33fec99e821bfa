// processes, process and kill: the actors layer's snapshots (introspect.hpp)
// turned into the protocol's fields.
#include "views.hpp"

#include <herd/actors/introspect.hpp>
#include <herd/actors/module.hpp>
#include <herd/actors/process.hpp>
#include <herd/supervisors/introspect.hpp>

#include <chrono>

namespace herd::observer {
namespace {

using namespace herd::introspect;

// How long `process` waits for the process to answer for its links and
// monitors (the protocol's figure).
constexpr std::chrono::milliseconds relations_wait{100};

json row_json(const process_row& r) {
  return {{"pid", r.id.to_string()},
          {"name", r.name.empty() ? json(nullptr) : json(r.name)},
          {"status", to_string(r.state)},
          {"mailbox", r.mailbox},
          {"reductions", r.reductions},
          {"memory", r.memory},
          {"age_ms", r.age_ms},
          {"hibernated", r.hibernated}};
}

json pids_json(const std::vector<pid>& v) {
  json a = json::array();
  for (pid p : v) a.push_back(p.to_string());
  return a;
}

sort_key sort_of(const std::optional<std::string>& s) {
  if (!s || *s == "reductions") return sort_key::reductions;
  if (*s == "mailbox") return sort_key::mailbox;
  if (*s == "memory") return sort_key::memory;
  if (*s == "age") return sort_key::age;
  throw request_failure{"bad_request", "sort must be mailbox, reductions, memory or age"};
}

}  // namespace

json processes_view(const json& f) {
  process_query q;
  q.sort = sort_of(string_field(f, "sort"));
  q.limit = std::size_t(int_field(f, "limit", 20, 1, 100000));
  q.name = string_field(f, "name");
  if (auto s = string_field(f, "status")) {
    q.state = status_from(*s);
    if (!q.state) throw request_failure{"bad_request", "status must be running, runnable, waiting, hibernated or exiting"};
  }
  process_list l = processes(q);
  json rows = json::array();
  for (auto& r : l.rows) rows.push_back(row_json(r));
  return {{"total", l.total}, {"matched", l.matched}, {"processes", std::move(rows)}};
}

json process_view(const json& f) {
  pid p = required_pid(f, "pid");
  auto d = process_info(p);
  if (!d) throw request_failure{"noproc", p.to_string() + " is not a live process"};
  std::optional<relations> rel = ask_relations(p, relations_wait);
  if (!rel) {  // it ended between the two looks
    throw request_failure{"noproc", p.to_string() + " is not a live process"};
  }
  pid sup = no_pid;
  if (d->parent.valid())
    for (auto& s : supervisor::live_supervisors())
      if (s.self == d->parent) sup = d->parent;
  json module = nullptr;
  for (auto& v : modules::list()) {
    for (pid a : v.actors)
      if (a == p) module = {{"name", v.name}, {"version", v.version}};
    if (!module.is_null()) break;
  }
  const process_row& r = d->row;
  json out;
  out["pid"] = r.id.to_string();
  out["name"] = r.name.empty() ? json(nullptr) : json(r.name);
  out["status"] = to_string(r.state);
  out["mailbox"] = r.mailbox;
  // Exact when the process answered (it summed its own queue); else the
  // scan's estimate.
  out["mailbox_bytes"] = rel->answered ? rel->mailbox_bytes : r.mailbox * mailbox_message_estimate;
  out["reductions"] = r.reductions;
  out["memory"] = r.memory;
  out["stack"] = {{"size", d->stack_size}, {"touched", d->stack_touched}};
  out["hibernated"] = r.hibernated;
  out["trap_exit"] = rel->answered ? rel->trap_exit : d->trap_exit;
  out["parent"] = pid_json(d->parent);
  out["supervisor"] = pid_json(sup);
  out["links"] = pids_json(rel->links);
  out["monitors"] = pids_json(rel->monitors);
  out["monitored_by"] = pids_json(rel->monitored_by);
  out["module"] = std::move(module);
  out["last_ran_ms_ago"] = d->last_ran_ms_ago;
  out["age_ms"] = r.age_ms;
  out["relations"] = rel->answered ? "ok" : "busy";
  return out;
}

json kill_view(const json& f) {
  pid p = required_pid(f, "pid");
  std::string reason = string_field(f, "reason").value_or("kill");
  if (reason.empty()) throw request_failure{"bad_request", "reason must not be empty"};
  exit_reason r = reason == "kill"       ? exit_reason::kill()
                  : reason == "shutdown" ? exit_reason::shutdown()
                  : reason == "normal"   ? exit_reason::normal()
                                         : exit_reason::error("observer", reason);
  if (!process_info(p)) throw request_failure{"noproc", p.to_string() + " is not a live process"};
  herd::exit(p, std::move(r));
  return {{"pid", p.to_string()}, {"reason", reason}};
}

}  // namespace herd::observer
