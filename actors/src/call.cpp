// The runtime side of call / reply (see <herd/actors/call.hpp>).
#include <herd/actors/call.hpp>

#include "process.hpp"
#include "signals.hpp"

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>

namespace herd::detail {
namespace {

constexpr std::size_t from_server_offset = sizeof(uint64_t);  // reply_envelope: ref, then from_server

}  // namespace

call_state begin_call(pid server, message* request) {
  process* p;
  try {
    p = require_process("herd::call");
  } catch (...) {
    destroy_message(request);  // ours since the call: it will never be sent
    throw;
  }
  if (server == p->id) {
    destroy_message(request);
    throw call_error(call_error::calling_self, exit_reason::error("calling_self", "a process called itself"),
                     "herd::call to " + server.to_string() + ": calling_self (a process cannot call itself)");
  }
  call_state st{new_ref().id, server, false};
  mark_mailbox_of(p);  // the reply and any `down` can only come after this point
  relations& r = relations_of(p);
  r.add(ref_role::alias, st.ref, no_pid);
  r.add(ref_role::monitoring, st.ref, server);
  *static_cast<from*>(request->payload()) = from{p->id, st.ref};
  st.sent = send_signal(server, kind_call, request);
  if (!st.sent) {
    r.drop(ref_role::alias, st.ref);
    r.drop(ref_role::monitoring, st.ref);
  }
  return st;
}

void end_call(const call_state& st, bool got_down, bool replied_by_server) {
  process* p = self_process();
  relations& r = relations_of(p);
  r.drop(ref_role::alias, st.ref);
  // A reply and a `down` can both have been filed (the server replied, then
  // died): whichever the receive did not take must not stay behind. Only what
  // came after the call's mark is looked at.
  drop_tagged(p, p->mbox.mark, false, st.ref);
  if (got_down) return;  // the drain already dropped the monitor
  r.drop(ref_role::monitoring, st.ref);
  if (!replied_by_server) send_signal(st.server, kind_demonitor, sig_demonitor{p->id, st.ref});
}

[[noreturn]] void throw_call_error(call_error::kind_t k, const call_state& st, exit_reason r,
                                   std::chrono::milliseconds timeout, std::string_view name) {
  std::string what = "herd::call to " + (name.empty() ? st.server.to_string() : "'" + std::string(name) + "'") + ": ";
  switch (k) {
    case call_error::timeout: what += "no reply within " + std::to_string(timeout.count()) + " ms"; break;
    case call_error::noproc: what += name.empty() ? "no such process (noproc)" : "no process registered under that name (noproc)"; break;
    case call_error::exited: what += "the server exited: " + r.to_string(); break;
    case call_error::calling_self: what += "calling_self"; break;
  }
  throw call_error(k, std::move(r), what);
}

bool unwinding_for_exit() noexcept {
  process* p = self_process();
  return p && p->pending_exit.load(std::memory_order_acquire) && std::uncaught_exceptions() > 0;
}

[[noreturn]] void terminate_call_while_exiting(const call_state& st) {
  std::fprintf(stderr,
               "herd: call to %s from a destructor while its process exits: it cannot wait, and the "
               "reply type has no default value to return\n",
               st.server.to_string().c_str());
  std::terminate();
}

bool reply_impl(const from& f, message* m) {
  // A server answering its own call drops the caller's monitor here, so the
  // caller need not send a demonitor.
  const ref_entry* w = nullptr;
  if (process* p = self_process(); p && p->rel && (w = p->rel->find(ref_role::watcher, f.ref)) &&
      w->other == f.caller && p->rel->drop(ref_role::watcher, f.ref))
    *reinterpret_cast<bool*>(static_cast<char*>(m->payload()) + from_server_offset) = true;
  return send_signal(f.caller, kind_alias, m);
}

}  // namespace herd::detail
