// The non-template parts of herd::server (see <herd/actors/server.hpp>):
// the synchronous start's wait, stop_server (and the process layer's error
// it returns), and an exception as a reason.
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

const char* to_string(errc e) noexcept {
  switch (e) {
    case errc::timeout: return "timeout";
  }
  return "?";
}

std::string error::message() const { return herd::detail::code_and_detail(to_string(code), detail); }

result<exit_reason, error> stop_server(pid server, exit_reason reason, std::chrono::milliseconds timeout) {
  detail::require_process("herd::stop_server");
  mark_mailbox();
  monitor_ref ref = monitor(server);
  send(server, detail::srv::stop_request{std::move(reason)});
  std::optional<exit_reason> died;
  receive_after(receive_mark{},
                when([ref](const down& d) { return d.ref == ref; }, [&](down&& d) { died.emplace(std::move(d.reason)); }),
                after(timeout));
  if (died) return std::move(*died);  // noproc too: there was no such process
  demonitor(ref);
  return error{errc::timeout,
               "stop_server " + server.to_string() + ": not exited within " + std::to_string(timeout.count()) + " ms"};
}

}  // namespace herd
