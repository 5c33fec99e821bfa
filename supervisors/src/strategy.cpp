// What a child's exit means: whether it is restarted (its restart type and
// exit reason), whether the restart is allowed (the intensity), and what
// else is restarted with it (the strategy). OTP's supervisor:do_restart and
// restart/3, case by case:
//
//   restart type  exit reason                 decision
//   permanent     any                         restart (reported)
//   transient     normal, shutdown{...}       not restarted, spec kept (silent)
//   transient     anything else               restart (reported)
//   temporary     normal, shutdown{...}       spec removed (silent)
//   temporary     anything else               spec removed (reported)
//
//   strategy            restarted with the child
//   one_for_one         nobody
//   simple_one_for_one  nobody (a dynamic child keeps its start arguments)
//   rest_for_one        the children started after it: stopped in reverse
//                       order first, then all started again in order
//   one_for_all         every child: the others stopped in reverse order,
//                       then all started in order
// A temporary child stopped because of a sibling is not restarted and its
// spec is dropped. A start that fails leaves the child "restarting" and
// queues a retry to the supervisor itself (counted again; OTP's
// try_again_restart), so a child that can never start ends in a give-up.
// simple_one_for_one's side of this is in dynamic_children.cpp.
#include <herd/actors/send.hpp>
#include <herd/runtime/clock.hpp>

#include "requests.hpp"
#include "state.hpp"

#include <utility>

namespace herd::supervisor::detail {

bool normal_exit(const exit_reason& r) { return r.is_normal() || r.kind() == exit_kind::shutdown; }

bool wants_restart(const child& c, const exit_reason& r) {
  switch (c.spec->restart) {
    case restart_type::permanent: return true;
    case restart_type::transient: return !normal_exit(r);
    case restart_type::temporary: return false;
  }
  return false;
}

void check_restart_allowed(state& s, const child& c, std::string_view label, std::string_view event) {
  exit_reason why;
  if (stop_requested(s, why)) {
    report_event(s, c, label, event, "not restarted: the supervisor is stopping");
    shut_down(s, std::move(why));
  }
  if (!s.restarts.add(rt::now_ms())) {
    report_give_up(s, c, label, event);
    shut_down(s, exit_reason::shutdown());
  }
}

namespace {

void retry_later(state& s, child& c) {
  c.restarting = true;
  send(s.self, req::try_again{c.key});
}

// Restarts static child i (not running) and whoever the strategy restarts
// with it. Returns the decision for the report.
std::string restart_static(state& s, std::size_t i) {
  const uint64_t key = s.children[i].key;
  switch (s.fl.strategy) {
    case restart_strategy::one_for_one:
    case restart_strategy::simple_one_for_one: {
      child& c = s.children[i];
      if (auto why = start_one(s, c)) {
        report_start_error(s, c, *why);
        retry_later(s, c);
        return "restart failed; will retry";
      }
      return "restarted as " + c.id.to_string();
    }
    case restart_strategy::rest_for_one: {
      terminate_from(s, i + 1);
      // The last child has nobody after it: the log says so, not "with the
      // children after it".
      const char* with = "";
      auto failed = start_from(s, i);
      if (i + 1 < s.children.size()) with = " with the children after it";
      if (failed) {
        retry_later(s, s.children[*failed]);
        return std::string("restarted") + with + " (rest_for_one); \"" + s.children[*failed].spec->id +
               "\" failed to start, will retry";
      }
      return "restarted as " + s.children[i].id.to_string() + with +
             (*with ? " (rest_for_one)" : " (rest_for_one; no children after it)");
    }
    case restart_strategy::one_for_all: {
      terminate_from(s, 0);  // drops temporaries: find the child again
      std::ptrdiff_t j = s.index_of_key(key);
      if (auto failed = start_from(s, 0)) {
        retry_later(s, s.children[*failed]);
        return "restarted with all children (one_for_all); \"" + s.children[*failed].spec->id +
               "\" failed to start, will retry";
      }
      return "restarted as " + s.children[std::size_t(j)].id.to_string() + " with all children (one_for_all)";
    }
  }
  return {};
}

}  // namespace

void child_exited(state& s, pid who, exit_reason r) {
  if (s.simple()) return dynamic_child_exited(s, who, std::move(r));
  auto i = std::size_t(s.index_of(who));
  child& c = s.children[i];
  c.id = no_pid;
  std::string label = std::move(c.label);
  if (!wants_restart(c, r)) {
    if (!normal_exit(r)) report_event(s, c, label, "exited: " + r.to_string(), "not restarted (temporary)");
    if (c.is_temporary()) s.children.erase(s.children.begin() + std::ptrdiff_t(i));
    return;
  }
  const std::string event = "exited: " + r.to_string();
  check_restart_allowed(s, c, label, event);
  const uint64_t key = c.key;
  std::string decision = restart_static(s, i);  // may move the children (one_for_all drops temporaries)
  std::ptrdiff_t j = s.index_of_key(key);
  report_event(s, s.children[std::size_t(j)], label, event, decision);
}

void retry_restart(state& s, uint64_t key) {
  if (s.simple()) return dynamic_retry(s, key);
  std::ptrdiff_t i = s.index_of_key(key);
  if (i < 0 || !s.children[std::size_t(i)].restarting) return;  // terminated or deleted meanwhile
  check_restart_allowed(s, s.children[std::size_t(i)], "", "could not be started");
  std::string decision = restart_static(s, std::size_t(i));
  if (std::ptrdiff_t j = s.index_of_key(key); j >= 0) report_event(s, s.children[std::size_t(j)], "", "retried", decision);
}

}  // namespace herd::supervisor::detail
