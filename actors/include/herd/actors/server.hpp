// herd::server: gen_server as a C++ class. The state is the object, a handler
// is a member function, and the loop (receive, dispatch, reply, hibernate,
// terminate) is written once, here.
//
//   namespace app {                      // message types: a named namespace
//   struct get {};
//   struct put { int v; };
//   struct inc { int by; };
//   }
//   struct counter : herd::server<counter> {
//     using calls = herd::types<app::get, app::put>;   // what the loop takes
//     using casts = herd::types<app::inc>;
//     using infos = herd::types<herd::exit_msg>;
//
//     explicit counter(int start) : n(start) {}       // gen_server's init
//     int handle_call(const app::get&, const herd::from&) { return n; }
//     herd::ok handle_call(app::put p) { n = p.v; return {}; }   // `from` optional
//     void handle_cast(const app::inc& i) { n += i.by; }
//     void handle_info(const herd::exit_msg& e) { ... }
//     void terminate(const herd::exit_reason&) { ... }  // optional
//     int n;
//   };
//
//   auto s = herd::start_server<counter>(5);          // server_ref<counter>
//   int v = s.call(app::get{});                       // reply type checked at compile time
//   int w = herd::call<int>(s, app::get{});           // or the plain, untyped call
//   herd::cast(s, app::inc{2});
//   auto why = herd::stop_server(s, herd::exit_reason::normal(), 5s);  // terminate runs; once it exited
//   if (!why) ...                                    // errc::timeout: still running after 5 s
//
// Design choices:
//  * CRTP, no virtuals. The loop is instantiated for the class, so every
//    handler call is direct (inlinable) and a handler may take its message by
//    value, const& or && — the loop needs no common signature.
//  * The class declares what it handles (`calls`, `casts`, `infos`, each
//    optional; herd::types<...>): C++ cannot enumerate a class's overloads.
//    The loop takes every message (the mailbox never fills up with junk) and
//    dispatches by the message's type id. A declared type without a matching
//    handler is a compile error. Anything else is dropped, counted
//    (unexpected_messages()) and reported through herd's logger, as
//    gen_server's default handle_info does; define
//    `void handle_unexpected(std::string_view type_name)` to do otherwise. A call of an undeclared request type is dropped
//    too, so its caller times out — server_ref::call rules that out at compile
//    time; herd::call<R>(pid, ...) cannot (nor can it check R).
//  * handle_call returns the reply (its type is what the caller must ask
//    for: call<int> for an `int`, call<std::string> for a C string), or
//    herd::noreply (answer later with herd::reply(from, v), from any
//    process), or herd::maybe_reply<R> to decide at run time. herd::ok is an
//    empty reply for calls that only need the acknowledgement; a handle_call
//    that returns void replies herd::ok when it returns (gen_server's
//    {reply, ok, State}).
//  * start_server is synchronous when called from a process, like
//    gen_server:start: the constructor (gen_server's init) runs in the new
//    process, and start_server returns once it has finished — or throws
//    init_error with the exception the constructor threw. From a thread
//    outside any process it returns at once.
//  * The object lives on the heap, owned by the loop, so that the server can
//    hibernate (give its stack back) between messages: server_options::
//    hibernate_after (gen_server's option of that name; 0 = whenever the
//    mailbox is empty), or hibernate_now() from a handler (gen_server's
//    `hibernate` return).
//  * Ending (gen_server's rules):
//      - stop_server(p, reason), or stop(reason) from a handler: terminate(reason)
//        runs, then the process exits with reason.
//      - An exit signal from the parent (the process that started the server;
//        no_pid: the node shutting down) while the server traps exits
//        (server_options::trap_exit, or herd::trap_exit(true) in the
//        constructor): terminate(reason), then exit with it. exit_msg from
//        anyone else goes to handle_info if declared in infos.
//      - An exception escaping a handler: terminate(error reason), then the
//        exception ends the process (its type and what() are the exit reason;
//        a caller whose call was in flight gets call_error::exited with it).
//      - Not trapping, an exit signal ends the process at its next blocking
//        point without terminate, as in Erlang. So does `kill`.
//    terminate may block (call, receive); an exception from it replaces the
//    reason. Handlers must not call herd::hibernate() (the deep form): its
//    unwinding is indistinguishable from an error here; use hibernate_now().
//  * No code_change hook: a server's class is compiled into the host and
//    cannot be replaced. A server whose behaviour must be swappable keeps a
//    herd::handler_ref<I> to a module (module.hpp) and calls
//    modules::upgrade on it between messages, as net::module_protocol does
//    for connections; the module's export_state/code_change carry the state.
#pragma once
#include <herd/actors/call.hpp>
#include <herd/actors/error.hpp>
#include <herd/actors/exit_reason.hpp>
#include <herd/actors/hibernate.hpp>
#include <herd/actors/links.hpp>
#include <herd/actors/message.hpp>
#include <herd/actors/pid.hpp>
#include <herd/actors/process.hpp>
#include <herd/actors/receive.hpp>
#include <herd/actors/send.hpp>
#include <herd/actors/spawn.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

namespace herd {

// A list of message types (a server's calls, casts and infos).
template <class... Ts>
struct types {};

// handle_call's "no reply now": answer later with herd::reply(from, v).
struct noreply_t {
  explicit constexpr noreply_t() = default;
};
inline constexpr noreply_t noreply{};

// handle_call's reply-or-not, decided at run time: return a value (replied at
// once) or herd::noreply.
template <class R>
class maybe_reply {
 public:
  maybe_reply(noreply_t) noexcept {}
  template <class U = R>
    requires(std::is_constructible_v<R, U &&> && !std::is_same_v<std::remove_cvref_t<U>, noreply_t> &&
             !std::is_same_v<std::remove_cvref_t<U>, maybe_reply>)
  maybe_reply(U&& v) : v_(std::forward<U>(v)) {}
  bool has_value() const noexcept { return v_.has_value(); }
  R& operator*() noexcept { return *v_; }

 private:
  std::optional<R> v_;
};

struct server_options {
  spawn_options spawn{};  // stack size, registered name, priority
  // Idle this long with an empty mailbox, the server hibernates (its stack
  // goes back to the pool until the next message). 0: whenever the mailbox is
  // empty after a message; infinity: never.
  std::chrono::milliseconds hibernate_after = infinity;
  bool trap_exit = false;  // set before the constructor runs
};

// start_server's failure: the constructor threw (reason: its type and what()),
// or the new process died before finishing it.
class init_error : public spawn_error {
 public:
  init_error(exit_reason r, const std::string& what) : spawn_error(what), reason_(std::move(r)) {}
  const exit_reason& reason() const noexcept { return reason_; }

 private:
  exit_reason reason_;
};

template <class S>
class server;
template <class S>
struct server_ref;

}  // namespace herd

// The loop (receive, dispatch, reply, hibernate, terminate) and start; it
// uses the declarations above.
#include <herd/actors/detail/server_loop.hpp>

namespace herd {

// The base of a server class S (CRTP): struct S : herd::server<S> { ... }.
// Everything here is for S's own handlers, in S's process.
template <class S>
class server {
 public:
  // Hooks; define one of these names in S to replace the default.
  void terminate(const exit_reason&) {}
  void handle_unexpected(std::string_view type_name) { detail::srv::log_unexpected(type_name); }

  // Ends the server after the current handler returns (a reply it returns is
  // sent first): terminate(reason), then the process exits with reason.
  void stop(exit_reason reason = exit_reason::normal()) {
    stop_ = true;
    stop_reason_ = std::move(reason);
  }
  // Hibernates after the current handler (if no message is waiting, the stack
  // is given back until one arrives).
  void hibernate_now() noexcept { hibernate_ = true; }

  // The process that started this server (no_pid: a thread outside any
  // process). Set once the constructor has returned.
  pid parent() const noexcept { return parent_; }
  // Messages of no declared type, dropped so far.
  std::size_t unexpected_messages() const noexcept { return unexpected_; }

 protected:
  server() = default;
  ~server() = default;

 private:
  template <class>
  friend struct detail::srv::loop;
  pid parent_ = no_pid;
  std::chrono::milliseconds hibernate_after_ = infinity;
  std::size_t unexpected_ = 0;
  bool stop_ = false;
  bool hibernate_ = false;
  exit_reason stop_reason_;
};


// A server's pid that knows the server's class: call and cast are checked
// against what S declares, and call's reply type is S's. Converts to pid.
template <class S>
struct server_ref {
  pid id;

  operator pid() const noexcept { return id; }

  // From a process (elsewhere: not_in_process); as herd::call (throws call_error).
  template <class Req>
  auto call(Req&& req, std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) const {
    detail::require_process("herd::server_ref::call");
    using Q = detail::message_type_t<Req>;
    static_assert(detail::srv::in<Q>(detail::srv::calls_t<S>{}), "herd::server_ref::call: S does not declare this request in `calls`");
    using R = typename detail::srv::reply_of<S, Q>::type;
    static_assert(!std::is_void_v<R>,
                  "herd::server_ref::call: this handle_call returns herd::noreply, so the reply type is unknown; "
                  "return herd::maybe_reply<R>, or use herd::call<R>(pid, req)");
    return herd::call<R>(id, std::forward<Req>(req), timeout);
  }
  // Any process or thread.
  template <class Msg>
  void cast(Msg&& msg) const {
    static_assert(detail::srv::in<detail::message_type_t<Msg>>(detail::srv::casts_t<S>{}),
                  "herd::server_ref::cast: S does not declare this message in `casts`");
    herd::cast(id, std::forward<Msg>(msg));
  }
  // Any process or thread: a message for handle_info.
  template <class Msg>
  void send(Msg&& msg) const {
    herd::send(id, std::forward<Msg>(msg));
  }
};

// Starts a server: S(args...) is constructed in the new process. From a
// process, returns once the constructor returned (throws init_error if it
// threw); from a foreign thread, at once. Throws spawn_error as spawn does
// (name taken, max_actors reached).
template <class S, class... Args>
server_ref<S> start_server(const server_options& o, Args&&... args) {
  return detail::srv::start<S>(o, false, std::forward<Args>(args)...);
}
template <class S, class... Args>
server_ref<S> start_server(const spawn_options& o, Args&&... args) {
  return detail::srv::start<S>(server_options{.spawn = o}, false, std::forward<Args>(args)...);
}
template <class S, class... Args>
  requires(!(std::is_same_v<std::remove_cvref_t<Args>, server_options> || ...) &&
           !(std::is_same_v<std::remove_cvref_t<Args>, spawn_options> || ...))
server_ref<S> start_server(Args&&... args) {
  return detail::srv::start<S>(server_options{}, false, std::forward<Args>(args)...);
}

// The same, linked to the caller before the server runs (gen_server:start_link).
// A constructor that throws then also sends the caller an exit signal. From a
// process only (the caller is the link's other end): elsewhere it throws
// not_in_process and starts nothing.
template <class S, class... Args>
server_ref<S> start_server_link(const server_options& o, Args&&... args) {
  return detail::srv::start<S>(o, true, std::forward<Args>(args)...);
}
template <class S, class... Args>
server_ref<S> start_server_link(const spawn_options& o, Args&&... args) {
  return detail::srv::start<S>(server_options{.spawn = o}, true, std::forward<Args>(args)...);
}
template <class S, class... Args>
  requires(!(std::is_same_v<std::remove_cvref_t<Args>, server_options> || ...) &&
           !(std::is_same_v<std::remove_cvref_t<Args>, spawn_options> || ...))
server_ref<S> start_server_link(Args&&... args) {
  return detail::srv::start<S>(server_options{}, true, std::forward<Args>(args)...);
}

// From a process (elsewhere: not_in_process): turns this process into the
// server S(args...) (gen_server:enter_loop). This is how a server runs under
// a supervisor:
//
//   {.id = "counter", .start = [] { return herd::serve<counter>(5); }}
//
// The server's parent — whose exit signal ends a trapping server through
// terminate — is herd::parent(): for a supervisor's child, its supervisor.
// There is no one to tell about a constructor that throws: the exception
// ends the process like any crash (its supervisor restarts it by its spec).
// Return what it returns (the server may hibernate).
template <class S, class... Args>
hibernation serve(const server_options& o, Args&&... args) {
  static_assert(std::is_base_of_v<server<S>, S>, "herd::serve<S>: S must derive from herd::server<S>");
  detail::require_process("herd::serve");
  return detail::srv::loop<S>::start(parent(), false, o, std::decay_t<Args>(std::forward<Args>(args))...);
}
template <class S, class... Args>
  requires(!(std::is_same_v<std::remove_cvref_t<Args>, server_options> || ...))
hibernation serve(Args&&... args) {
  return serve<S>(server_options{}, std::forward<Args>(args)...);
}

// From a process (elsewhere: not_in_process). Stops a server synchronously (gen_server:stop): the stop
// request is taken in order with the server's other messages, terminate(reason)
// runs, and this returns the reason the server exited with (`reason`, unless
// terminate threw or something else ended it first) once it has exited —
// noproc if there was no such process. errc::timeout if it has not exited
// within `timeout` (the request stays queued; nothing is killed). The same
// shape as supervisor::stop.
result<exit_reason, error> stop_server(pid server, exit_reason reason = exit_reason::normal(),
                                       std::chrono::milliseconds timeout = infinity);

}  // namespace herd
