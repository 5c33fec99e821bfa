// Crash reports, through herd's asynchronous logger. One line each, naming
// the supervisor (pid and registered name), the child (id, pid and the name
// it had), the exit reason and what the supervisor does about it:
//
//   supervisor <0.3> (top): child "db" <7.1> (db) exited: killed; restarted as <9.1>
//   supervisor <0.3> (top): child "db" <9.1> exited: {error, std::runtime_error: boom};
//       restart intensity reached (2 restarts in 5000 ms, 1 allowed): shutting down
//   supervisor <0.3> (top): child "cache" <4.2> shutdown error: killed
//   supervisor <0.3> (top): child "spin" <5.1> kill pending for 1000 ms (it has not reached a blocking point ...)
//   supervisor <0.3> (top): child "b" failed to start: herd: cannot spawn: the name 'b' is taken
//   supervisor <0.3> (top): unexpected message of type app::hello, dropped
#include <herd/actors/logger.hpp>
#include <herd/runtime/clock.hpp>

#include "state.hpp"

#include <string>

namespace herd::supervisor::detail {
namespace {

std::string head(const state& s, const child& c, std::string_view label) {
  std::string line = "supervisor ";
  line += s.label.empty() ? s.self.to_string() : s.label;
  line += ": child ";
  line += child_name(s, c);
  line += ' ';
  if (!label.empty()) {
    line += label;
    line += ' ';
  }
  return line;
}

}  // namespace

std::string child_name(const state& s, const child& c) {
  return (s.simple() ? "(dynamic) \"" : "\"") + c.spec->id + "\"";
}

void report_event(const state& s, const child& c, std::string_view label, std::string_view event,
                  std::string_view decision) {
  if (!logging_enabled()) return;
  std::string line = head(s, c, label);
  line += event;
  line += "; ";
  line += decision;
  log_report(line);
}

void report_give_up(const state& s, const child& c, std::string_view label, std::string_view event) {
  if (!logging_enabled()) return;
  std::string line = head(s, c, label);
  line += event;
  line += "; restart intensity reached (more than ";
  line += std::to_string(s.fl.intensity);
  line += " restart(s) in ";
  line += std::to_string(s.fl.period.count());
  line += " ms): shutting down";
  log_report(line);
}

void report_shutdown_error(const state& s, const child& c, const exit_reason& r) {
  if (!logging_enabled()) return;
  std::string line = head(s, c, c.label);
  line += "shutdown error: ";
  line += r.to_string();
  log_report(line);
}

void report_kill_pending(const state& s, const child& c, uint64_t ms) {
  if (!logging_enabled()) return;
  std::string line = head(s, c, c.label);
  line += "kill pending for ";
  line += std::to_string(ms);
  line += " ms (it has not reached a blocking point since; still waiting)";
  log_report(line);
}

void report_start_error(const state& s, const child& c, std::string_view why) {
  if (!logging_enabled()) return;
  std::string line = head(s, c, "");
  line += "failed to start: ";
  line += why;
  log_report(line);
}

void report_unexpected(const state& s, std::string_view type_name) {
  if (!logging_enabled()) return;
  std::string line = "supervisor ";
  line += s.label.empty() ? s.self.to_string() : s.label;
  line += ": unexpected message of type ";
  line += type_name;
  line += ", dropped";
  log_report(line);
}

}  // namespace herd::supervisor::detail
