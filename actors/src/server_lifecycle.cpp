// The non-template parts of herd::server (see <herd/actors/server.hpp>):
// the synchronous start's wait, stop_server, and an exception as a reason.
#include <herd/actors/logger.hpp>
#include <herd/actors/server.hpp>

#include "process.hpp"

#include <optional>
#include <string>

namespace herd::detail::srv {

// The same words the runtime uses for an exception that ends a process, so
// terminate() sees the reason links and monitors will see.
exit_reason current_exception_reason() { return reason_of_current_exception(); }

void await_init(pid who) {
  // The caller marked its mailbox before spawning: the ack is after the mark.
  monitor_ref ref = monitor(who);
  std::optional<init_ack> ack;
  std::optional<exit_reason> died;
  receive_after(receive_mark{},
                when([who](const init_ack& a) { return a.who == who; }, [&](init_ack&& a) { ack.emplace(std::move(a)); }),
                when([ref](const down& d) { return d.ref == ref; }, [&](down&& d) { died.emplace(std::move(d.reason)); }));
  if (ack) {
    demonitor(ref);
    if (ack->ok) return;
    throw init_error(ack->reason, "herd::start_server: the server's constructor failed: " + ack->reason.to_string());
  }
  throw init_error(*died, "herd::start_server: the server exited before its constructor returned: " +
                              died->to_string());
}

void log_unexpected(std::string_view type_name) noexcept {
  if (!logging_enabled()) return;
  try {
    std::string line = "server ";
    line += process_label(self());
    line += ": dropped an unexpected message of type ";
    line += type_name;
    log_report(line);
  } catch (...) {  // out of memory: the report is lost, the message dropped anyway
  }
}

}  // namespace herd::detail::srv

namespace herd {

exit_reason stop_server(pid server, exit_reason reason, std::chrono::milliseconds timeout) {
  mark_mailbox();
  monitor_ref ref = monitor(server);
  send(server, detail::srv::stop_request{std::move(reason)});
  std::optional<exit_reason> died;
  receive_after(receive_mark{},
                when([ref](const down& d) { return d.ref == ref; }, [&](down&& d) { died.emplace(std::move(d.reason)); }),
                after(timeout));
  std::string who = "herd::stop_server(" + server.to_string() + "): ";
  if (!died) {
    demonitor(ref);
    throw call_error(call_error::timeout, exit_reason::normal(),
                     who + "not exited within " + std::to_string(timeout.count()) + " ms");
  }
  if (died->kind() == exit_kind::noproc) throw call_error(call_error::noproc, *died, who + "no such process (noproc)");
  return std::move(*died);
}

}  // namespace herd
