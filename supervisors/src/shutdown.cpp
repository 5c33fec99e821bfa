// Stopping children (OTP's supervisor:shutdown/1 and terminate_children).
//
// One child, in this order:
//  1. monitor it — its `down` is now certain to come, with its exit reason
//     (or noproc if it had already gone);
//  2. take an exit_msg of it that is already queued (it ended on its own just
//     before), then unlink: no exit_msg of it can be mistaken for a crash
//     later (invariant 1 in supervisor.cpp);
//  3. brutal_kill: exit(child, kill). A timeout: exit(child, shutdown), wait
//     for the `down` that long, then exit(child, kill). infinity: exit(child,
//     shutdown) and wait.
//  4. After `kill`, herd cannot end a process that never reaches a blocking
//     point: every flags::kill_report_after (doubling, at most a minute) the
//     supervisor reports "kill pending" with the pid, name and time waited,
//     and goes on waiting — never starting a second instance beside it.
// An unexpected reason (not shutdown, killed after brutal_kill, or normal for
// a child that is not permanent) is reported as a shutdown error.
//
// Dynamic children (simple_one_for_one) are stopped all at once: every one
// monitored, flushed and unlinked, then signalled, then their `down`s
// collected under one shared timeout (OTP's terminate_dynamic_children).
#include <herd/actors/links.hpp>
#include <herd/actors/process.hpp>
#include <herd/actors/receive.hpp>
#include <herd/runtime/clock.hpp>

#include "state.hpp"

#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

namespace herd::supervisor::detail {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds max_report_interval{60000};

std::optional<exit_reason> take_exit_of(pid p) {
  std::optional<exit_reason> r;
  herd::receive(when([p](const exit_msg& e) { return e.from == p; }, [&](exit_msg&& e) { r = std::move(e.reason); }),
                after(milliseconds(0)));
  return r;
}

std::optional<exit_reason> wait_down(monitor_ref m, milliseconds t) {
  std::optional<exit_reason> r;
  herd::receive(when([m](const down& d) { return d.ref == m; }, [&](down&& d) { r = std::move(d.reason); }), after(t));
  return r;
}

milliseconds first_report_wait(const state& s) { return std::max<milliseconds>(s.fl.kill_report_after, milliseconds(1)); }

exit_reason wait_after_kill(state& s, const child& c, monitor_ref m) {
  const uint64_t t0 = rt::now_ms();
  milliseconds wait = first_report_wait(s);
  for (;;) {
    if (auto r = wait_down(m, wait)) return std::move(*r);
    report_kill_pending(s, c, rt::now_ms() - t0);
    wait = std::min(wait * 2, max_report_interval);
  }
}

bool expected_reason(const child& c, const shutdown_spec& sp, const exit_reason& r) {
  switch (r.kind()) {
    case exit_kind::shutdown: return sp.kind() != shutdown_spec::kill_at_once;
    case exit_kind::killed: return sp.kind() == shutdown_spec::kill_at_once;
    case exit_kind::normal: return c.spec->restart != restart_type::permanent;
    case exit_kind::noproc: return true;  // it had gone already (its reason went with its link)
    default: return false;
  }
}

}  // namespace

exit_reason terminate_one(state& s, child& c) {
  const pid p = c.id;
  const shutdown_spec sp = c.spec->shutdown.resolved(c.spec->type);
  monitor_ref m = monitor(p);
  std::optional<exit_reason> early = take_exit_of(p);
  unlink(p);
  exit_reason r;
  if (early) {
    wait_down(m, herd::infinity);
    r = std::move(*early);
  } else {
    switch (sp.kind()) {
      case shutdown_spec::kill_at_once:
        herd::exit(p, exit_reason::kill());
        r = wait_after_kill(s, c, m);
        break;
      case shutdown_spec::timeout:
        herd::exit(p, exit_reason::shutdown());
        if (auto d = wait_down(m, sp.timeout_ms())) {
          r = std::move(*d);
        } else {
          herd::exit(p, exit_reason::kill());
          r = wait_after_kill(s, c, m);
        }
        break;
      case shutdown_spec::by_type:  // resolved above
      case shutdown_spec::wait_forever:
        herd::exit(p, exit_reason::shutdown());
        r = std::move(*wait_down(m, herd::infinity));
        break;
    }
  }
  if (!expected_reason(c, sp, r)) report_shutdown_error(s, c, r);
  c.id = no_pid;
  return r;
}

void terminate_from(state& s, std::size_t from) {
  for (std::size_t i = s.children.size(); i-- > from;)
    if (s.children[i].running()) terminate_one(s, s.children[i]);
  auto first = s.children.begin() + std::ptrdiff_t(std::min(from, s.children.size()));
  s.children.erase(std::remove_if(first, s.children.end(), [](const child& c) { return c.is_temporary(); }),
                   s.children.end());
}

void terminate_dynamic(state& s) {
  if (s.dynamic.empty()) {
    s.dyn_waiting.clear();
    return;
  }
  const shutdown_spec sp = s.dyn_spec->shutdown.resolved(s.dyn_spec->type);
  std::unordered_map<uint64_t, pid> waiting;  // monitor ref -> child
  std::unordered_map<pid, exit_reason> reasons;
  waiting.reserve(s.dynamic.size());
  for (auto& [p, c] : s.dynamic) waiting.emplace(monitor(p).id, p);
  // Exits already queued: those children ended on their own.
  for (bool more = true; more;) {
    more = false;
    herd::receive(when([&](const exit_msg& e) { return s.dynamic.count(e.from) && !reasons.count(e.from); },
                       [&](exit_msg&& e) {
                         reasons.emplace(e.from, std::move(e.reason));
                         more = true;
                       }),
                  after(milliseconds(0)));
  }
  const exit_reason signal = sp.kind() == shutdown_spec::kill_at_once ? exit_reason::kill() : exit_reason::shutdown();
  for (auto& [p, c] : s.dynamic) {
    unlink(p);
    if (!reasons.count(p)) herd::exit(p, signal);
  }
  auto collect = [&](milliseconds t) {  // until all are down or t passed
    uint64_t deadline = t == herd::infinity ? UINT64_MAX : rt::now_ms() + uint64_t(t.count());
    while (!waiting.empty()) {
      uint64_t now = rt::now_ms();
      if (now >= deadline) return;
      milliseconds left = deadline == UINT64_MAX ? herd::infinity : milliseconds(deadline - now);
      bool got = false;
      herd::receive(when([&](const down& d) { return waiting.count(d.ref.id) > 0; },
                         [&](down&& d) {
                           auto it = waiting.find(d.ref.id);
                           reasons.try_emplace(it->second, std::move(d.reason));
                           waiting.erase(it);
                           got = true;
                         }),
                    after(left));
      if (!got) return;
    }
  };
  if (sp.kind() == shutdown_spec::timeout) {
    collect(sp.timeout_ms());
    for (auto& [ref, p] : waiting) herd::exit(p, exit_reason::kill());
  } else if (sp.kind() != shutdown_spec::kill_at_once) {
    collect(herd::infinity);
  }
  const uint64_t t0 = rt::now_ms();
  for (milliseconds wait = first_report_wait(s); !waiting.empty(); wait = std::min(wait * 2, max_report_interval)) {
    collect(wait);
    for (auto& [ref, p] : waiting) report_kill_pending(s, s.dynamic.at(p), rt::now_ms() - t0);
  }
  for (auto& [p, c] : s.dynamic) {
    auto it = reasons.find(p);
    if (it != reasons.end() && !expected_reason(c, sp, it->second)) report_shutdown_error(s, c, it->second);
  }
  s.dynamic.clear();
  s.dyn_waiting.clear();
}

[[noreturn]] void shut_down(state& s, exit_reason reason) {
  if (s.simple()) terminate_dynamic(s);
  else terminate_from(s, 0);
  herd::exit(std::move(reason));
}

}  // namespace herd::supervisor::detail
