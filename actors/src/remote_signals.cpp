// Signals across nodes: the owner's side of links and monitors stays in
// links.cpp and signals.cpp; here a signal to a remote pid becomes a
// remote_signal for the dist layer, and one from a remote process becomes
// the local signal it stands for, so that act_on treats a remote peer as it
// treats a local one.
#include "remote_signals.hpp"

#include <herd/actors/detail/remote.hpp>

#include "signals.hpp"

#include <atomic>

namespace herd::detail {

namespace {
// Release on install pairs with the acquire in each use (as remote.cpp's hooks).
std::atomic<const remote_signal_hooks*> installed_signals{nullptr};
}  // namespace

void set_remote_signal_hooks(const remote_signal_hooks* h) noexcept {
  installed_signals.store(h, std::memory_order_release);
}

const remote_signal_hooks* remote_signals() noexcept { return installed_signals.load(std::memory_order_acquire); }

bool is_remote_signal_kind(uint32_t kind) noexcept {
  return kind == kind_link || kind == kind_unlink || kind == kind_exit || kind == kind_monitor ||
         kind == kind_demonitor;
}

bool deliver_remote_signal(pid to, message* m) noexcept {
  const remote_signal_hooks* h = remote_signals();
  if (!h || !to.valid()) {
    destroy_message(m);
    return false;
  }
  remote_signal s;
  switch (m->kind) {
    case kind_link:
      s.op = remote_signal::link;
      s.from = m->as<sig_link>().from;
      break;
    case kind_unlink:
      s.op = remote_signal::unlink;
      s.from = m->as<sig_unlink>().from;
      break;
    case kind_exit: {
      auto& e = m->as<sig_exit>();
      s.op = remote_signal::exit;
      s.from = e.from;
      s.reason = std::move(e.reason);
      s.via_link = e.via_link;
      break;
    }
    case kind_monitor:
      s.op = remote_signal::monitor;
      s.from = m->as<sig_monitor>().from;
      s.ref = m->as<sig_monitor>().ref;
      break;
    case kind_demonitor:
      s.op = remote_signal::demonitor;
      s.from = m->as<sig_demonitor>().from;
      s.ref = m->as<sig_demonitor>().ref;
      break;
    default:
      destroy_message(m);
      return false;
  }
  destroy_message(m);
  h->send(to, std::move(s));
  return true;
}

bool deliver_signal_from_remote(pid to, remote_signal s) noexcept {
  if (!to.valid() || to.is_remote()) return false;
  try {
    switch (s.op) {
      case remote_signal::link: return send_signal(to, kind_link, sig_link{s.from});
      case remote_signal::unlink: return send_signal(to, kind_unlink, sig_unlink{s.from});
      case remote_signal::exit: return send_signal(to, kind_exit, sig_exit{s.from, std::move(s.reason), s.via_link});
      case remote_signal::monitor: return send_signal(to, kind_monitor, sig_monitor{s.from, s.ref});
      case remote_signal::demonitor: return send_signal(to, kind_demonitor, sig_demonitor{s.from, s.ref});
      case remote_signal::down:
        return send_signal(to, kind_down, down{monitor_ref{s.ref}, s.from, std::move(s.reason)});
    }
  } catch (...) {  // out of memory making the signal
  }
  return false;
}

}  // namespace herd::detail
