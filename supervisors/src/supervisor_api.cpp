// The supervisor API as seen from the calling process: start_link's
// handshake, and herd::call requests the supervisor answers (supervisor.cpp).
// Supervisor calls wait without a timeout, as OTP's do: herd::call monitors
// the supervisor, so one that dies ends the wait (with call_error).
#include <herd/actors/call.hpp>
#include <herd/actors/links.hpp>
#include <herd/actors/process.hpp>
#include <herd/actors/receive.hpp>
#include <herd/actors/spawn.hpp>
#include <herd/supervisors/supervisor.hpp>

#include "requests.hpp"
#include "state.hpp"

#include <stdexcept>
#include <string>
#include <utility>

namespace herd::supervisor {

using detail::req::init_ack;
namespace req = detail::req;

const char* to_string(errc e) noexcept {
  switch (e) {
    case errc::not_found: return "not_found";
    case errc::running: return "running";
    case errc::restarting: return "restarting";
    case errc::already_present: return "already_present";
    case errc::already_started: return "already_started";
    case errc::start_failed: return "start_failed";
    case errc::bad_args: return "bad_args";
    case errc::simple_one_for_one: return "simple_one_for_one";
    case errc::invalid_spec: return "invalid_spec";
    case errc::timeout: return "timeout";
  }
  return "?";
}

std::string error::message() const {
  std::string what = to_string(code);
  if (child) {
    what += ' ';  // (not " " + ...: GCC 12 warns about that concatenation, wrongly)
    what += child.to_string();
  }
  return herd::detail::code_and_detail(what.c_str(), detail);
}

const char* to_string(restart_strategy s) noexcept {
  switch (s) {
    case restart_strategy::one_for_one: return "one_for_one";
    case restart_strategy::one_for_all: return "one_for_all";
    case restart_strategy::rest_for_one: return "rest_for_one";
    case restart_strategy::simple_one_for_one: return "simple_one_for_one";
  }
  return "?";
}

result<pid> start_link(flags f, std::vector<child_spec> children) {
  herd::detail::require_process("herd::supervisor::start_link");
  const pid parent = self();
  receive_mark mark = mark_mailbox();
  pid sup;
  try {
    sup = spawn_link({.initial_call = "herd::supervisor", .kind = process_kind::supervisor},
                     [f = std::move(f), ch = std::move(children), parent]() mutable {
      detail::serve(std::move(f), std::move(ch), parent, true);
    });
  } catch (const spawn_error& e) {
    return error{errc::start_failed, no_pid, e.what()};
  }
  // The supervisor ran until its first blocking point, so the ack is usually
  // here already; the monitor covers a supervisor that dies before it.
  monitor_ref m = monitor(sup);
  std::optional<result<pid>> r;
  receive_after(mark,
                when([sup](const init_ack& a) { return a.sup == sup; },
                     [&](init_ack&& a) {
                       if (a.ok) r.emplace(sup);
                       else r.emplace(std::move(a.err));
                     }),
                when([m](const down& d) { return d.ref == m; },
                     [&](down&& d) {
                       r.emplace(error{errc::start_failed, no_pid, "the supervisor exited: " + d.reason.to_string()});
                     }));
  demonitor(m);
  return std::move(*r);
}

child_spec supervisor_spec(std::string id, flags f, std::vector<child_spec> children, restart_type restart) {
  child_spec c;
  c.id = std::move(id);
  c.start = [f = std::move(f), ch = std::move(children)] { run(f, ch); };
  c.restart = restart;
  c.shutdown = herd::infinity;
  c.type = child_type::supervisor;
  return c;
}

result<pid> start_child(pid sup, child_spec spec) {
  herd::detail::require_process("herd::supervisor::start_child");
  return call<result<pid>>(sup, req::start_spec{std::move(spec)}, herd::infinity);
}

result<pid> start_child(pid sup, child_args args) {
  herd::detail::require_process("herd::supervisor::start_child");
  return call<result<pid>>(sup, req::start_args{std::move(args)}, herd::infinity);
}

result<> terminate_child(pid sup, std::string_view id) {
  herd::detail::require_process("herd::supervisor::terminate_child");
  return call<result<>>(sup, req::terminate{std::string(id), no_pid}, herd::infinity);
}

result<> terminate_child(pid sup, pid child) {
  herd::detail::require_process("herd::supervisor::terminate_child");
  return call<result<>>(sup, req::terminate{{}, child}, herd::infinity);
}

result<pid> restart_child(pid sup, std::string_view id) {
  herd::detail::require_process("herd::supervisor::restart_child");
  return call<result<pid>>(sup, req::restart{std::string(id)}, herd::infinity);
}

result<> delete_child(pid sup, std::string_view id) {
  herd::detail::require_process("herd::supervisor::delete_child");
  return call<result<>>(sup, req::remove{std::string(id)}, herd::infinity);
}

std::vector<child_info> which_children(pid sup) {
  herd::detail::require_process("herd::supervisor::which_children");
  return call<std::vector<child_info>>(sup, req::which{}, herd::infinity);
}

child_counts count_children(pid sup) {
  herd::detail::require_process("herd::supervisor::count_children");
  return call<child_counts>(sup, req::count{}, herd::infinity);
}

result<exit_reason> stop(pid sup, exit_reason reason, std::chrono::milliseconds timeout) {
  herd::detail::require_process("herd::supervisor::stop");
  // Unlinked first: a parent that stops its supervisor is not taken down by
  // the supervisor's (non-normal) exit.
  unlink(sup);
  monitor_ref m = monitor(sup);
  herd::exit(sup, std::move(reason));
  std::optional<exit_reason> r;
  receive(when([m](const down& d) { return d.ref == m; }, [&](down&& d) { r.emplace(std::move(d.reason)); }),
          after(timeout));
  if (r) return std::move(*r);
  demonitor(m);
  return error{errc::timeout, no_pid,
               "stop " + sup.to_string() + ": still alive after " + std::to_string(timeout.count()) + " ms"};
}

}  // namespace herd::supervisor
