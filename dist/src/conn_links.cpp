// Links, monitors and exit signals across nodes. Going out, actors hands a
// signal to a remote pid to hook_signal, which queues it as a link_request
// on the connection process for the pid's node (connecting on first use,
// as BEAM); that process records links and monitors in its link_table and
// writes the frames. Coming in, the connection process turns frames into
// the local signals they stand for. The table dies with the connection,
// answering noconnection for what it held.
#include "conn_links.hpp"

#include <herd/actors/process.hpp>
#include <herd/actors/send.hpp>

#include <mutex>

#include "remote_pids.hpp"
#include "state.hpp"
#include "term_node.hpp"

namespace herd::dist::detail {

using herd::detail::deliver_signal_from_remote;
using herd::detail::remote_signal;

link_request::link_request(remote_signal s, herd::pid t, std::string n)
    : sig(std::move(s)), to(t), name(std::move(n)), armed(sig.op == remote_signal::link || sig.op == remote_signal::monitor) {}

link_request::~link_request() {
  if (!armed) return;
  // A name monitor's down names no pid (Erlang's names {Name, Node}).
  herd::pid who = name.empty() ? to : herd::no_pid;
  if (sig.op == remote_signal::link)
    deliver_signal_from_remote(sig.from, remote_signal{remote_signal::exit, who, 0, exit_reason::noconnection(), true});
  else
    deliver_signal_from_remote(sig.from, remote_signal{remote_signal::down, who, sig.ref, exit_reason::noconnection(), false});
}

link_table::~link_table() {
  for (auto& [local, remote] : links_)
    deliver_signal_from_remote(local, remote_signal{remote_signal::exit, remote, 0, exit_reason::noconnection(), true});
  for (auto& [ref, m] : mons_)
    deliver_signal_from_remote(m.local, remote_signal{remote_signal::down, m.remote, ref, exit_reason::noconnection(), false});
}

void link_table::local(link_request& r, std::string& out) {
  r.armed = false;  // taken: the table answers for it from now on
  const remote_signal& s = r.sig;
  switch (s.op) {
    case remote_signal::link:
      links_.emplace(s.from, r.to);
      out += frame_link(me_, ctl_link, s.from, r.to);
      break;
    case remote_signal::unlink:
      // Sent even when the table has no such link: the peer may still have
      // its half (a LINK of its own crossing ours).
      links_.erase({s.from, r.to});
      if (unlink_id_) out += frame_unlink_id(me_, next_unlink_id_++, s.from, r.to);
      else out += frame_link(me_, ctl_unlink, s.from, r.to);
      break;
    case remote_signal::exit:
      if (!s.via_link) out += frame_exit(me_, false, s.from, r.to, s.reason, exit_payload_);
      else if (links_.erase({s.from, r.to})) out += frame_exit(me_, true, s.from, r.to, s.reason, exit_payload_);
      // else: the link went first (the peer unlinked, or its EXIT crossed ours)
      break;
    case remote_signal::monitor: {
      herd::pid remote = r.name.empty() ? r.to : herd::no_pid;
      out += frame_monitor(me_, ctl_monitor_p, s.from, remote, r.name, s.ref);
      mons_[s.ref] = mon{s.from, remote, std::move(r.name)};
      break;
    }
    case remote_signal::demonitor: {
      auto it = mons_.find(s.ref);
      if (it == mons_.end()) break;  // it has fired
      out += frame_monitor(me_, ctl_demonitor_p, s.from, it->second.remote, it->second.name, s.ref);
      mons_.erase(it);
      break;
    }
    case remote_signal::down: break;  // never sent to a remote pid
  }
}

bool link_table::remote(std::string_view body, std::string& out, herd::detail::atom_budget* atoms, uint32_t origin) {
  bool refused = false;
  auto f = [&] {
    herd::detail::atom_charge_scope charge(atoms);
    pid_charge_scope pids(origin);
    auto r = decode_link_frame(me_, body);
    refused = charge_refused();
    return r;
  }();
  if (!f) return false;
  // A pid it names was refused (max_remote_pids_per_connection): dropped,
  // the connection closes.
  if (refused) return true;
  switch (f->op) {
    case ctl_link:
      if (deliver_signal_from_remote(f->to, remote_signal{remote_signal::link, f->from, 0, {}, false}))
        links_.emplace(f->to, f->from);
      else  // no such process here: as BEAM, the linker gets noproc
        out += frame_exit_raw(f->to_t, f->from_t, exit_reason::noproc(), exit_payload_);
      break;
    case ctl_unlink:
    case ctl_unlink_id:
      links_.erase({f->to, f->from});
      deliver_signal_from_remote(f->to, remote_signal{remote_signal::unlink, f->from, 0, {}, false});
      if (f->op == ctl_unlink_id) out += frame_unlink_id_ack(f->id, f->to_t, f->from_t);
      break;
    // Nothing waits for it: the local side dropped its half when it
    // unlinked, and an EXIT the peer sent before it saw our UNLINK_ID finds
    // no link there and is dropped (actors' unlink, as OTP's protocol asks).
    case ctl_unlink_id_ack: break;
    case ctl_exit:
    case ctl_exit_tt:
    case ctl_payload_exit:
    case ctl_payload_exit_tt:
      links_.erase({f->to, f->from});
      deliver_signal_from_remote(f->to, remote_signal{remote_signal::exit, f->from, 0, std::move(f->reason), true});
      break;
    case ctl_exit2:
    case ctl_exit2_tt:
    case ctl_payload_exit2:
    case ctl_payload_exit2_tt:
      deliver_signal_from_remote(f->to, remote_signal{remote_signal::exit, f->from, 0, std::move(f->reason), false});
      break;
    case ctl_monitor_p_exit:
    case ctl_payload_monitor_p_exit: {
      auto it = mons_.find(f->ref);
      if (it == mons_.end() || it->second.local != f->to) break;  // demonitored meanwhile
      herd::pid who = it->second.remote;
      mons_.erase(it);
      deliver_signal_from_remote(f->to, remote_signal{remote_signal::down, who, f->ref, std::move(f->reason), false});
      break;
    }
    default: break;
  }
  return true;
}

namespace {

// To the connection process for `node`, starting one from a process (a
// signal sent while a process ends — its links' exits — only uses an
// existing one: there is nothing to tell a node we are not connected to).
void route(link_request r, const std::string& node) {
  herd::pid conn;
  {
    rt::lock_guard g(state().mu);
    if (!state().running) return;  // r answers noconnection
    auto it = state().conns.find(node);
    if (it != state().conns.end()) conn = it->second.proc;
  }
  if (!conn) conn = connection_for(node);
  if (conn) herd::send(conn, std::move(r));  // a connection already gone: the message's end answers
}

void hook_signal(herd::pid to, remote_signal s) noexcept {
  try {
    link_request r(std::move(s), to, {});
    auto where = lookup_remote(to);
    if (where) route(std::move(r), where->node);
  } catch (...) {
  }
}

bool hook_monitor_name(herd::pid from, uint64_t ref, std::string_view name, std::string_view node,
                       herd::pid* handle) noexcept {
  try {
    {
      rt::lock_guard g(state().mu);
      if (state().running && node == state().me.name) return false;
    }
    // A pid no process has (creation 0) stands for the node: the demonitor
    // sent to it is routed to the node's connection like any other.
    *handle = intern_remote(remote_pid{std::string(node), 0, 0, 0});
    route(link_request(remote_signal{remote_signal::monitor, from, ref, {}, false}, *handle, std::string(name)),
          std::string(node));
  } catch (...) {
  }
  return true;
}

}  // namespace

void install_signal_hooks() {
  static const herd::detail::remote_signal_hooks hooks{&hook_signal, &hook_monitor_name};
  static std::once_flag once;
  std::call_once(once, [] { herd::detail::set_remote_signal_hooks(&hooks); });
}

}  // namespace herd::dist::detail
