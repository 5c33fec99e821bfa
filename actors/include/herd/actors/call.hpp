// call / cast / reply: gen_server's request-reply, as plain functions.
//
//   R r = herd::call<R>(server, request, 5s);   // from a process
//   ... in the server:
//   herd::receive([](herd::call_request<get>&& c) { herd::reply(c.from, value_for(c.req)); });
//
// call monitors the server for the duration of the call (as gen_server:call
// does): a server that dies fails the call at once with its exit reason, a
// server that does not exist with noproc, and no answer within the timeout
// with timeout. The reply travels to an alias of the call: once call has
// returned or thrown, a late reply is dropped when the caller's mailbox is
// drained and never reaches it. The reply is looked for from a receive mark,
// so a caller with 100,000 unmatched messages does not rescan them.
// The monitor rides on the request and is dropped by the reply: a call costs
// two messages.
//
// A request, a cast or a reply that is a C string travels as std::string, as
// with send.
//
// A server may answer later: keep `from` and call reply(from, value) when
// ready, from any process (gen_server's deferred reply).
//
// While an exit unwinds the caller's stack (a destructor that calls), call
// neither blocks nor throws: the request is sent and call returns a
// value-initialized R at once (an R with no default value there is a
// programming error: std::terminate, with a message).
#pragma once
#include <herd/actors/exit_reason.hpp>
#include <herd/actors/links.hpp>
#include <herd/actors/message.hpp>
#include <herd/actors/ok.hpp>
#include <herd/actors/pid.hpp>
#include <herd/actors/receive.hpp>
#include <herd/actors/registry.hpp>
#include <herd/actors/send.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace herd {

// Where a reply goes.
struct from {
  pid caller;
  uint64_t ref = 0;
};

// What a server receives for call<R>(server, Req{...}).
template <class Req>
struct call_request {
  herd::from from;  // first: read by the runtime (signals.cpp)
  Req req;
};

// What a cast delivers.
template <class Msg>
struct cast_request {
  Msg msg;
};

// The reply on its way back; the ref comes first (read by the runtime).
template <class R>
struct reply_envelope {
  uint64_t ref;
  bool from_server;  // the server replied itself (its monitor is already gone)
  R value;
};

class call_error : public std::runtime_error {
 public:
  enum kind_t { timeout, noproc, exited, calling_self };
  call_error(kind_t k, exit_reason r, const std::string& what) : std::runtime_error(what), kind_(k), reason_(std::move(r)) {}
  kind_t kind() const noexcept { return kind_; }
  // exited: the server's exit reason; noproc: noproc; timeout: normal;
  // calling_self: error{"calling_self", ...} (OTP exits with calling_self).
  const exit_reason& reason() const noexcept { return reason_; }

 private:
  kind_t kind_;
  exit_reason reason_;
};

namespace detail {
struct call_state {
  uint64_t ref;
  pid server;
  bool sent;  // false: the server was gone (noproc)
};
call_state begin_call(pid server, message* request);
// replied_by_server: the server dropped its monitor when it replied.
void end_call(const call_state& st, bool got_down, bool replied_by_server);
// name: the registered name the call was made to, if any (for the message).
[[noreturn]] void throw_call_error(call_error::kind_t k, const call_state& st, exit_reason r,
                                   std::chrono::milliseconds timeout, std::string_view name = {});
bool reply_impl(const from& f, message* m);
// True while an exit unwinds the calling process's stack.
bool unwinding_for_exit() noexcept;
[[noreturn]] void terminate_call_while_exiting(const call_state& st);
}  // namespace detail

// From a process; elsewhere it throws not_in_process (a call needs a mailbox
// for the reply). Throws call_error on timeout, noproc or the server's exit,
// and at once with calling_self when `server` is the caller itself (it could
// only wait out its timeout).
template <class R, class Req>
R call(pid server, Req&& req, std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
  static_assert(!std::is_void_v<R>,
                "herd::call: ask for herd::ok — what a handle_call that returns void or herd::ok replies — or "
                "for the reply's type");
  static_assert(!detail::is_c_string<R>, "herd::call: a C string reply travels as std::string: ask for call<std::string>");
  using Q = call_request<detail::message_type_t<Req>>;
  detail::call_state st = detail::begin_call(server, detail::make_message<Q>(Q{from{}, std::forward<Req>(req)}));
  if (!st.sent) detail::throw_call_error(call_error::noproc, st, exit_reason::noproc(), timeout);
  std::optional<R> result;
  // The server's exit reason, if it died: on the heap (a rare path), so that
  // a caller parked here keeps a smaller frame (a compact one copies it out).
  std::unique_ptr<exit_reason> died;
  bool by_server = false;
  const uint64_t ref = st.ref;
  receive_after(receive_mark{},
                when([ref](const reply_envelope<R>& r) { return r.ref == ref; },
                     [&](reply_envelope<R>&& r) {
                       by_server = r.from_server;
                       result.emplace(std::move(r.value));
                     }),
                when([ref](const down& d) { return d.ref.id == ref; },
                     [&](down&& d) { died = std::make_unique<exit_reason>(std::move(d.reason)); }),
                after(timeout));
  detail::end_call(st, died != nullptr, by_server);
  if (result) return std::move(*result);
  if (!died && detail::unwinding_for_exit()) {
    if constexpr (std::is_default_constructible_v<R>) return R{};
    else detail::terminate_call_while_exiting(st);
  }
  if (died) {
    auto k = died->kind() == exit_kind::noproc ? call_error::noproc : call_error::exited;
    detail::throw_call_error(k, st, std::move(*died), timeout);
  }
  detail::throw_call_error(call_error::timeout, st, exit_reason::normal(), timeout);
}

// By registered name, as OTP's call(Name, Request): the name is looked up
// once, at the call; nothing registered under it fails at once with noproc.
// (OTP's {Name, Node} form waits for distribution: herd nodes have no names.)
template <class R, class Req>
R call(std::string_view name, Req&& req, std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
  detail::require_process("herd::call");  // before the lookup: the rule, not noproc, is the answer
  std::optional<pid> to = whereis(name);
  if (!to) detail::throw_call_error(call_error::noproc, detail::call_state{0, no_pid, false}, exit_reason::noproc(),
                                    timeout, name);
  return call<R>(*to, std::forward<Req>(req), timeout);
}

// Any process or thread. False if the caller is gone (the reply is dropped).
template <class R>
bool reply(const from& f, R&& value) {
  using E = reply_envelope<detail::message_type_t<R>>;
  return detail::reply_impl(f, detail::make_message<E>(E{f.ref, false, std::forward<R>(value)}));
}

// Any process or thread: a request with no reply.
template <class Msg>
void cast(pid server, Msg&& msg) {
  send(server, cast_request<detail::message_type_t<Msg>>{std::forward<Msg>(msg)});
}
// By registered name. False (noproc: the message is dropped) when nothing is
// registered under it; OTP's cast ignores that, herd lets you decide.
template <class Msg>
bool cast(std::string_view name, Msg&& msg) {
  return send(name, cast_request<detail::message_type_t<Msg>>{std::forward<Msg>(msg)});
}

}  // namespace herd
