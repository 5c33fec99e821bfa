// simple_one_for_one: one template spec, any number of children started by
// start_child(sup, args...), each restarted (when its restart type says so)
// with a fresh copy of its own arguments. Children are kept by pid; one whose
// restart failed waits by key for its retry. Nobody is restarted with a
// child: the strategy is one_for_one over the dynamic set. Stopping them all
// is terminate_dynamic (shutdown.cpp): at once, under one timeout.
#include <herd/actors/send.hpp>

#include "requests.hpp"
#include "state.hpp"

#include <utility>

namespace herd::supervisor::detail {
namespace {

// Starts c (not running, not in the maps) and files it: by pid when it
// runs, else waiting for a retry.
void start_and_file(state& s, child c, std::string_view label, std::string_view event) {
  if (auto why = start_one(s, c)) {
    report_start_error(s, c, *why);
    if (!event.empty()) report_event(s, c, label, event, "restart failed; will retry");
    const uint64_t key = c.key;
    c.restarting = true;
    s.dyn_waiting.emplace(key, std::move(c));
    send(s.self, req::try_again{key});
    return;
  }
  if (!event.empty()) report_event(s, c, label, event, "restarted as " + c.id.to_string());
  const pid p = c.id;
  s.dynamic.emplace(p, std::move(c));
}

}  // namespace

result<pid> handle_start_args(state& s, child_args args) {
  if (!s.simple()) return fail(errc::bad_args, "extra arguments are for simple_one_for_one supervisors");
  if (args.type() != s.dyn_spec->start.args_type())
    return fail(errc::bad_args, "the start function takes " + std::string(s.dyn_spec->start.args_type_name()) +
                                    ", given " + std::string(args.type_name()));
  child c;
  c.key = s.next_key++;
  c.spec = s.dyn_spec;
  c.args = std::move(args);
  if (auto why = start_one(s, c, early_exit::fail)) return fail(errc::start_failed, *why);
  const pid p = c.id;
  s.dynamic.emplace(p, std::move(c));
  return p;
}

result<> dynamic_terminate(state& s, pid p) {
  auto it = p.valid() ? s.dynamic.find(p) : s.dynamic.end();
  if (it == s.dynamic.end()) return fail(errc::not_found);  // by pid only, as in OTP
  terminate_one(s, it->second);
  s.dynamic.erase(it);
  return herd::ok{};
}

void dynamic_child_exited(state& s, pid who, exit_reason r) {
  auto it = s.dynamic.find(who);
  child c = std::move(it->second);
  s.dynamic.erase(it);
  c.id = no_pid;
  std::string label = std::move(c.label);
  const std::string event = "exited: " + r.to_string();
  if (!wants_restart(c, r)) {
    if (!normal_exit(r)) report_event(s, c, label, event, "not restarted (temporary)");
    return;  // a dynamic child that is not restarted is gone, spec and all
  }
  check_restart_allowed(s, c, label, event);
  start_and_file(s, std::move(c), label, event);
}

void dynamic_retry(state& s, uint64_t key) {
  auto it = s.dyn_waiting.find(key);
  if (it == s.dyn_waiting.end()) return;  // stopped meanwhile
  child c = std::move(it->second);
  s.dyn_waiting.erase(it);
  check_restart_allowed(s, c, "", "could not be started");
  start_and_file(s, std::move(c), "", "retried");
}

}  // namespace herd::supervisor::detail
