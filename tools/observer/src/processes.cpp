// processes and process: the actors layer's snapshots (introspect.hpp)
// turned into the protocol's fields.
#include "views.hpp"

#include <herd/actors/introspect.hpp>
#include <herd/actors/module.hpp>
#include <herd/actors/process.hpp>
#include <herd/runtime/clock.hpp>
#include <herd/supervisors/introspect.hpp>

#include <chrono>

namespace herd::observer {
namespace {

using namespace herd::introspect;

// How long `process` waits for the process to answer for its links and
// monitors (the protocol's figure).
constexpr std::chrono::milliseconds relations_wait{100};

// What a process said about itself (introspect::set_protocol): the label,
// and with one, its outbound queue (a process without one has no queue to
// show: its rows stay as they were).
void add_protocol(json& out, const process_row& r) {
  out["protocol"] = r.protocol.empty() ? json(nullptr) : json(r.protocol);
  if (r.protocol.empty()) return;
  out["out_frames"] = r.out_frames;
  out["out_bytes"] = r.out_bytes;
}

json row_json(const process_row& r) {
  json out = {{"pid", r.id.to_string()},
          {"name", r.name.empty() ? json(nullptr) : json(r.name)},
          {"initial_call", r.initial_call.empty() ? json(nullptr) : json(r.initial_call)},
          {"kind", to_string(r.kind)},
          {"status", to_string(r.state)},
          {"mailbox", r.mailbox},
          {"reductions", r.reductions},
          {"memory", r.memory},
          {"age_ms", r.age_ms},
          {"hibernated", r.hibernated}};
  add_protocol(out, r);
  return out;
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
  if (*s == "reductions_rate") return sort_key::reductions_rate;
  throw request_failure{"bad_request", "sort must be mailbox, reductions, reductions_rate, memory or age"};
}

}  // namespace

// A baseline older than this is not used for a rate (the figure would be
// an average over minutes); the request starts a new one.
constexpr uint64_t stale_baseline_ms = 10000;

json processes_view(const json& f, reductions_sample* baseline) {
  process_query q;
  q.sort = sort_of(string_field(f, "sort"));
  q.limit = std::size_t(int_field(f, "limit", 20, 1, 100000));
  q.name = string_field(f, "name");
  if (auto s = string_field(f, "status")) {
    q.state = status_from(*s);
    if (!q.state) throw request_failure{"bad_request", "status must be running, runnable, waiting, hibernated or exiting"};
  }
  if (auto k = string_field(f, "kind")) {
    q.kind = kind_from(*k);
    if (!q.kind) throw request_failure{"bad_request", "kind must be worker, server, supervisor, acceptor or connection"};
  }
  // reductions_rate: this pass's sample is the next request's baseline, so
  // a rate covers the time between two requests (from any client).
  const bool rates = q.sort == sort_key::reductions_rate;
  reductions_sample next;
  if (rates) {
    const uint64_t now = rt::now_ms();
    if (baseline && !baseline->by_slot.empty() && now - baseline->at_ms <= stale_baseline_ms) q.since = baseline;
    q.sample = &next;
  }
  process_list l = processes(q);
  const uint64_t interval = q.since ? next.at_ms - q.since->at_ms : 0;
  json rows = json::array();
  for (auto& r : l.rows) {
    json row = row_json(r);
    if (rates)
      row["reductions_per_s"] = interval ? json(double(r.reductions_delta) * 1000.0 / double(interval)) : json(nullptr);
    rows.push_back(std::move(row));
  }
  json out = {{"total", l.total}, {"matched", l.matched}, {"processes", std::move(rows)}};
  if (rates) {
    out["interval_ms"] = interval;
    if (baseline) *baseline = std::move(next);
  }
  return out;
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
  out["initial_call"] = r.initial_call.empty() ? json(nullptr) : json(r.initial_call);
  out["kind"] = to_string(r.kind);
  out["status"] = to_string(r.state);
  out["mailbox"] = r.mailbox;
  // Exact when the process answered (it summed its own queue); else the
  // scan's estimate.
  const uint64_t mailbox_bytes = rel->answered ? rel->mailbox_bytes : r.mailbox * mailbox_message_estimate;
  out["mailbox_bytes"] = mailbox_bytes;
  out["reductions"] = r.reductions;
  // The parts of `memory`, exact where the process answered.
  const uint64_t rel_bytes = rel->answered ? rel->relations_bytes : d->relations_bytes;
  json parts = {{"stack", d->stack_pages},
                {"mailbox", mailbox_bytes},
                {"control_block", d->control_block},
                {"relations", rel_bytes},
                {"continuation", rel->continuation_bytes}};
  uint64_t memory = 0;
  for (auto& [k, v] : parts.items()) memory += v.get<uint64_t>();
  out["memory"] = memory;
  out["memory_parts"] = std::move(parts);
  out["stack"] = {{"size", d->stack_size}, {"touched", d->stack_touched}};
  out["hibernated"] = r.hibernated;
  add_protocol(out, r);
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

}  // namespace herd::observer
