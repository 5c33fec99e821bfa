// kill: sends the exit signal, then waits (bounded by timeout_ms) for the
// process to end, so the reply says what happened: "exited" with the exit
// reason, or "sent" when it had not ended in time (a process that never
// blocks, or one that traps a non-kill reason and carries on).
//
// The wait is a monitor, held by a short helper process (a monitor needs a
// process; the observer's thread is none). Order matters: the helper
// monitors first and says so, and only then is the exit sent, so the `down`
// cannot be missed. The exit is sent from this thread, not the helper: if
// the workers are too busy to run the helper within the timeout, the kill
// still goes out (and the answer is "sent").
#include "views.hpp"

#include <herd/actors/introspect.hpp>
#include <herd/actors/links.hpp>
#include <herd/actors/process.hpp>
#include <herd/actors/receive.hpp>
#include <herd/actors/spawn.hpp>

#include <chrono>
#include <herd/runtime/thread_safety.hpp>

#include <condition_variable>
#include <memory>

namespace herd::observer {
namespace {

using steady = std::chrono::steady_clock;

struct exit_wait {
  rt::mutex m;
  std::condition_variable cv;
  bool monitoring HERD_GUARDED_BY(m) = false;
  bool ended HERD_GUARDED_BY(m) = false;
  std::string reason HERD_GUARDED_BY(m);  // the down's reason, once ended
};

exit_reason reason_from(const std::string& r) {
  return r == "kill"       ? exit_reason::kill()
         : r == "shutdown" ? exit_reason::shutdown()
         : r == "normal"   ? exit_reason::normal()
                           : exit_reason::error("observer", r);
}

// Spawns the helper that watches `p` for up to `wait`. False: no process
// could be made (the kill is then answered "sent" without a wait).
bool watch(pid p, std::chrono::milliseconds wait, const std::shared_ptr<exit_wait>& w) {
  try {
    herd::spawn({.initial_call = "herd::observer kill waiter"}, [w, p, wait] {
      monitor_ref m = herd::monitor(p);
      {
        rt::lock_guard<rt::mutex> g(w->m);
        w->monitoring = true;
        w->cv.notify_all();
      }
      herd::receive(herd::when([m](const down& d) { return d.ref == m; },
                               [&](down&& d) {
                                 rt::lock_guard<rt::mutex> g(w->m);
                                 w->ended = true;
                                 w->reason = d.reason.to_string();
                                 w->cv.notify_all();
                               }),
                    herd::after(wait, [m] { herd::demonitor(m); }));
    });
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

json kill_view(const json& f) {
  pid p = required_pid(f, "pid");
  std::string reason = string_field(f, "reason").value_or("kill");
  if (reason.empty()) throw request_failure{"bad_request", "reason must not be empty"};
  const std::chrono::milliseconds wait{int_field(f, "timeout_ms", 1000, 0, 60000)};
  if (!introspect::process_info(p)) throw request_failure{"noproc", p.to_string() + " is not a live process"};
  const auto t0 = steady::now();
  const auto deadline = t0 + wait;
  auto w = std::make_shared<exit_wait>();
  bool watching = wait.count() > 0 && watch(p, wait, w);
  if (watching) {
    rt::unique_lock g(w->m);
    while (!w->monitoring)
      if (w->cv.wait_until(g.native(), deadline) == std::cv_status::timeout) break;
    // It ended between the liveness check and the monitor: not our doing.
    if (w->ended && w->reason == "noproc") throw request_failure{"noproc", p.to_string() + " is not a live process"};
  }
  herd::exit(p, reason_from(reason));
  json out = {{"pid", p.to_string()}, {"reason", reason}};
  bool ended = false;
  if (watching) {
    rt::unique_lock g(w->m);
    while (!w->ended)
      if (w->cv.wait_until(g.native(), deadline) == std::cv_status::timeout) break;
    ended = w->ended;
    if (ended) out["exit_reason"] = w->reason;
  }
  out["outcome"] = ended ? "exited" : "sent";
  out["waited_ms"] =
      uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0).count());
  return out;
}

}  // namespace herd::observer
