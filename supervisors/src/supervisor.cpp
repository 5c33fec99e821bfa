// The supervisor process. OTP's `supervisor` semantics as plain actor code.
//
// Design
//  * A supervisor is a process that traps exits. It spawns each child with
//    spawn_link, so a child's end reaches it as exit_msg{child, reason} in
//    its mailbox, in order with everything else that child sent.
//  * Everything lives in one `state` on the supervisor's own stack, touched
//    only by the supervisor process: no locks. The API (supervisor_api.cpp)
//    reaches it only through herd::call; every request is answered after the
//    work is done (terminate_child replies once the child is gone).
//  * The loop below takes one message at a time: an exit_msg (a child ended,
//    or someone wants the supervisor to stop), a call, or a restart retry.
//    While it stops or restarts children it waits in selective receives for
//    their `down`s, so calls and other exits queue up meanwhile, as in OTP.
//
// Invariants
//  1. A child is linked to the supervisor exactly while it is `running()`:
//     stopping one monitors it, then takes any exit_msg of it already
//     queued, then unlinks — so no exit_msg of a child the supervisor stopped
//     is ever taken for a crash later (shutdown.cpp).
//  2. A child is started again only after its `down` (or exit_msg) has come:
//     a pid is never replaced while the process behind it lives. A child that
//     ignores even `kill` (it never reaches a blocking point) is reported as
//     "kill pending" and waited for (shutdown.cpp).
//  3. Static children keep their start order in `children`; stopping goes in
//     reverse. A temporary child is never restarted and its spec is dropped
//     when it ends or is stopped.
//  4. Every restart counts against the intensity before it happens; more
//     than `intensity` in `period` stops the children and ends the
//     supervisor with `shutdown`, so its own supervisor decides (strategy.cpp).
//  5. The supervisor stops — children first, in reverse order — on an exit
//     from its parent (any reason) or an exit signal with a reason other than
//     `normal` from a process that is not one of its children (exit/2 from
//     anywhere, the node shutting down). It then exits with that reason.
//  6. A child of type supervisor counts as started once it has answered a
//     call, which it does only from this loop, after its init: so the next
//     sibling starts after the whole subtree, and start_link returns with
//     the tree up (children.cpp, start_one).
//
// Where the rest lives: state.hpp lists the files by concern — children.cpp
// (starting, the calls), strategy.cpp (restart decisions), dynamic_children.cpp
// (simple_one_for_one), shutdown.cpp (stopping), reports.cpp (the logger).
#include <herd/actors/call.hpp>
#include <herd/actors/links.hpp>
#include <herd/actors/logger.hpp>
#include <herd/actors/process.hpp>
#include <herd/actors/receive.hpp>
#include <herd/actors/registry.hpp>
#include <herd/actors/send.hpp>
#include <herd/supervisors/supervisor.hpp>

#include "introspect_impl.hpp"
#include "requests.hpp"
#include "state.hpp"

#include <algorithm>
#include <unordered_set>
#include <utility>

namespace herd::supervisor::detail {

state::state(flags f, pid parent_pid)
    : fl(std::move(f)), self(herd::self()), parent(parent_pid), restarts(fl.intensity, fl.period) {}

child* state::find(pid p) {
  if (simple()) {
    auto it = dynamic.find(p);
    return it == dynamic.end() ? nullptr : &it->second;
  }
  std::ptrdiff_t i = index_of(p);
  return i < 0 ? nullptr : &children[std::size_t(i)];
}

std::ptrdiff_t state::index_of(pid p) const {
  for (std::size_t i = 0; i < children.size(); ++i)
    if (children[i].id == p) return std::ptrdiff_t(i);
  return -1;
}

std::ptrdiff_t state::index_of(std::string_view id) const {
  for (std::size_t i = 0; i < children.size(); ++i)
    if (children[i].spec->id == id) return std::ptrdiff_t(i);
  return -1;
}

std::ptrdiff_t state::index_of_key(uint64_t key) const {
  for (std::size_t i = 0; i < children.size(); ++i)
    if (children[i].key == key) return std::ptrdiff_t(i);
  return -1;
}

namespace {

std::optional<supervisor::error> validate(const flags& f, const std::vector<child_spec>& specs) {
  if (f.strategy == restart_strategy::simple_one_for_one) {
    if (specs.size() != 1)
      return supervisor::error{errc::invalid_spec, no_pid, "simple_one_for_one takes exactly one child spec"};
    if (!specs[0].start) return supervisor::error{errc::invalid_spec, no_pid, "the child spec has no start function"};
    return std::nullopt;
  }
  std::unordered_set<std::string_view> ids;
  for (const child_spec& c : specs) {
    if (c.id.empty()) return supervisor::error{errc::invalid_spec, no_pid, "a child spec has an empty id"};
    if (!c.start) return supervisor::error{errc::invalid_spec, no_pid, "child \"" + c.id + "\" has no start function"};
    if (c.start.args_type() != child_args().type())
      return supervisor::error{errc::invalid_spec, no_pid,
                               "child \"" + c.id + "\": only simple_one_for_one children take arguments"};
    if (!ids.insert(c.id).second) return supervisor::error{errc::invalid_spec, no_pid, "duplicate child id \"" + c.id + "\""};
  }
  return std::nullopt;
}

// Registers the name, checks the specs, starts the children in order.
std::optional<supervisor::error> init(state& s, std::vector<child_spec> specs) {
  if (!s.fl.name.empty()) {
    if (!register_name(s.fl.name, s.self)) {
      std::optional<pid> holder = whereis(s.fl.name);
      return supervisor::error{errc::already_started, holder.value_or(no_pid),
                               "the name \"" + s.fl.name + "\" is taken"};
    }
  }
  s.label = process_label(s.self);
  if (auto e = validate(s.fl, specs)) return e;
  if (s.simple()) {
    s.dyn_spec = std::make_shared<const child_spec>(std::move(specs[0]));
    return std::nullopt;
  }
  s.children.reserve(specs.size());
  for (child_spec& c : specs) {
    child ch;
    ch.key = s.next_key++;
    ch.spec = std::make_shared<const child_spec>(std::move(c));
    s.children.push_back(std::move(ch));
  }
  for (std::size_t i = 0; i < s.children.size(); ++i) {
    if (auto why = start_one(s, s.children[i], early_exit::fail)) {
      std::string id = s.children[i].spec->id;
      report_start_error(s, s.children[i], *why);
      terminate_from(s, 0);
      return supervisor::error{errc::start_failed, no_pid, "failed_to_start_child \"" + id + "\": " + *why};
    }
  }
  return std::nullopt;
}

// True when a queued exit_msg asks the supervisor to stop (invariant 5).
bool is_stop_request(state& s, const exit_msg& e) {
  if (s.find(e.from)) return false;
  return (s.parent.valid() && e.from == s.parent) || !e.reason.is_normal();
}

void on_exit(state& s, exit_msg&& e) {
  if (s.find(e.from)) {
    child_exited(s, e.from, std::move(e.reason));
    return;
  }
  if (is_stop_request(s, e)) shut_down(s, std::move(e.reason));
  // A normal exit of a linked process that is not a child: nothing to do.
}

[[noreturn]] void loop(state& s) {
  for (;;) {
    herd::receive(
        [&](exit_msg&& e) { on_exit(s, std::move(e)); },
        [&](call_request<req::start_spec>&& c) { reply(c.from, handle_start_spec(s, std::move(c.req.spec))); },
        [&](call_request<req::start_args>&& c) { reply(c.from, handle_start_args(s, std::move(c.req.args))); },
        [&](call_request<req::terminate>&& c) { reply(c.from, handle_terminate(s, c.req.id, c.req.child)); },
        [&](call_request<req::restart>&& c) { reply(c.from, handle_restart(s, c.req.id)); },
        [&](call_request<req::remove>&& c) { reply(c.from, handle_delete(s, c.req.id)); },
        [&](call_request<req::which>&& c) { reply(c.from, handle_which(s)); },
        [&](call_request<req::count>&& c) { reply(c.from, handle_count(s)); },
        [&](call_request<req::tree>&& c) { reply(c.from, handle_tree(s, c.req.max)); },
        [&](req::try_again&& t) { retry_restart(s, t.key); },
        // Last: anything else would stay in the mailbox forever and slow every receive.
        [&](const any_message& m) { report_unexpected(s, m.type_name()); });
  }
}

}  // namespace

// From the supervisor process only: a stop request already queued? Then the
// supervisor stops instead of restarting (node shutdown signals children and
// supervisors at once; restarting children that are being shut down anyway
// would only make noise and new processes).
bool stop_requested(state& s, exit_reason& why) {
  if (herd::mailbox_size() == 0) return false;
  bool found = false;
  herd::receive(when([&](const exit_msg& e) { return is_stop_request(s, e); },
                     [&](exit_msg&& e) {
                       why = std::move(e.reason);
                       found = true;
                     }),
                after(std::chrono::milliseconds(0)));
  return found;
}

[[noreturn]] void serve(flags f, std::vector<child_spec> specs, pid parent, bool ack) {
  trap_exit(true);
  state s(std::move(f), parent);
  std::optional<supervisor::error> err = init(s, std::move(specs));
  if (err) {
    std::string why = err->detail;
    if (ack) {
      unlink(parent);  // start_link returns the error; the caller is not taken down
      send(parent, req::init_ack{s.self, false, std::move(*err)});
    }
    herd::exit(exit_reason::shutdown(why));
  }
  if (ack) send(parent, req::init_ack{s.self, true, {errc::not_found}});
  registration listed(s);  // the observer's tree, until this stack unwinds
  loop(s);
}

}  // namespace herd::supervisor::detail

namespace herd::supervisor {

[[noreturn]] void run(flags f, std::vector<child_spec> children) {
  herd::detail::require_process("herd::supervisor::run");
  detail::serve(std::move(f), std::move(children), no_pid, false);
}

}  // namespace herd::supervisor
