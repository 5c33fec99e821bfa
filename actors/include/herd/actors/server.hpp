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
//   herd::stop_server(s);                             // terminate runs; returns once it exited
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
//    for: call<int> for an `int`), or herd::noreply (answer later with
//    herd::reply(from, v), from any process), or herd::maybe_reply<R> to
//    decide at run time. herd::ok is an empty reply for calls that only need
//    the acknowledgement.
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

// An empty reply, for calls that only need to know they were done.
struct ok {};

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

namespace detail::srv {

// What stop_server sends: a system message, taken in order with the rest.
struct stop_request {
  exit_reason reason;
};
// The new process's answer to a synchronous start.
struct init_ack {
  pid who;
  bool ok;
  exit_reason reason;
};

template <class T>
struct is_types : std::false_type {};
template <class... Ts>
struct is_types<types<Ts...>> : std::true_type {};

template <class S>
auto calls_of() {
  if constexpr (requires { typename S::calls; }) return typename S::calls{};
  else return types<>{};
}
template <class S>
auto casts_of() {
  if constexpr (requires { typename S::casts; }) return typename S::casts{};
  else return types<>{};
}
template <class S>
auto infos_of() {
  if constexpr (requires { typename S::infos; }) return typename S::infos{};
  else return types<>{};
}
template <class S>
using calls_t = decltype(calls_of<S>());
template <class S>
using casts_t = decltype(casts_of<S>());
template <class S>
using infos_t = decltype(infos_of<S>());

template <class T, class... Ts>
constexpr bool in(types<Ts...>) {
  return (std::is_same_v<T, Ts> || ...);
}

template <class>
inline constexpr bool always_false = false;

// handle_call(req, from) or handle_call(req); req as an rvalue when it binds.
template <class S, class Q>
decltype(auto) invoke_call(S& s, Q& q, const from& f) {
  if constexpr (requires { s.handle_call(std::move(q), f); }) return s.handle_call(std::move(q), f);
  else if constexpr (requires { s.handle_call(q, f); }) return s.handle_call(q, f);
  else if constexpr (requires { s.handle_call(std::move(q)); }) return s.handle_call(std::move(q));
  else if constexpr (requires { s.handle_call(q); }) return s.handle_call(q);
  else static_assert(always_false<Q>, "herd::server: a type in `calls` has no handle_call(const Q&, const herd::from&)");
}
template <class S, class M>
void invoke_cast(S& s, M& m) {
  if constexpr (requires { s.handle_cast(std::move(m)); }) s.handle_cast(std::move(m));
  else if constexpr (requires { s.handle_cast(m); }) s.handle_cast(m);
  else static_assert(always_false<M>, "herd::server: a type in `casts` has no handle_cast(const M&)");
}
template <class S, class M>
void invoke_info(S& s, M& m) {
  if constexpr (requires { s.handle_info(std::move(m)); }) s.handle_info(std::move(m));
  else if constexpr (requires { s.handle_info(m); }) s.handle_info(m);
  else static_assert(always_false<M>, "herd::server: a type in `infos` has no handle_info(const M&)");
}

template <class T>
struct maybe_reply_value {
  using type = void;
};
template <class R>
struct maybe_reply_value<maybe_reply<R>> {
  using type = R;
};

// The reply type of S's call of Q; void for a handler that returns noreply.
template <class S, class Q>
struct reply_of {
  using raw = std::remove_cvref_t<decltype(invoke_call(std::declval<S&>(), std::declval<Q&>(), std::declval<const from&>()))>;
  using type = std::conditional_t<std::is_same_v<raw, noreply_t>, void,
                                  std::conditional_t<std::is_void_v<typename maybe_reply_value<raw>::type>, raw,
                                                     typename maybe_reply_value<raw>::type>>;
};

// In server.cpp. Inside a catch block: the current exception as an exit
// reason (the same the runtime gives a process it ends).
exit_reason current_exception_reason();
// From a process: waits for `who`'s init_ack (after mark); throws init_error.
void await_init(pid who);
// The default handle_unexpected: one line to herd's logger.
void log_unexpected(std::string_view type_name) noexcept;

template <class S>
struct loop;

}  // namespace detail::srv

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

namespace detail::srv {

template <class S>
struct loop {
  using ptr = std::unique_ptr<S>;

  static hibernation start(pid parent, bool ack, server_options o, auto... args) {
    if (o.trap_exit) trap_exit(true);
    ptr sp;
    try {
      sp = std::make_unique<S>(std::move(args)...);
    } catch (const exit_unwind&) {
      throw;
    } catch (...) {
      if (ack) send(parent, init_ack{self(), false, current_exception_reason()});
      throw;
    }
    server<S>& b = *sp;
    b.parent_ = parent;
    b.hibernate_after_ = o.hibernate_after;
    if (ack) send(parent, init_ack{self(), true, {}});
    return run(std::move(sp));
  }

  // The process body: the loop, with terminate on a handler's exception.
  static hibernation run(ptr sp) {
    try {
      return messages(sp);
    } catch (const exit_unwind&) {
      throw;
    } catch (...) {
      if (sp) {
        exit_reason r = current_exception_reason();
        static_cast<S&>(*sp).terminate(r);
      }
      throw;
    }
  }

  static hibernation continuation(ptr& sp) {
    return hibernated([sp = std::move(sp)]() mutable -> hibernation { return run(std::move(sp)); });
  }

  // terminate(reason), then end the process with reason. sp is emptied
  // first, so a terminate that throws is not called again by run().
  static hibernation finish(ptr& sp, exit_reason reason) {
    ptr mine = std::move(sp);
    static_cast<S&>(*mine).terminate(reason);
    mine.reset();
    if (!reason.is_normal()) herd::exit(std::move(reason));
    return hibernation(nullptr);
  }

  static hibernation messages(ptr& sp) {
    S& s = *sp;
    server<S>& b = s;
    matcher any{[](void*, message*) { return true; }, nullptr};
    for (;;) {
      const bool timed = b.hibernate_after_ != infinity;
      message* m = receive_scan(any, timed ? receive_deadline(b.hibernate_after_) : UINT64_MAX, false);
      if (!m) return continuation(sp);  // idle for hibernate_after
      {
        message_owner owner{m};
        if (m->type == type_id<stop_request>) {
          b.stop_ = true;
          b.stop_reason_ = std::move(m->as<stop_request>().reason);
        } else if (!dispatch(s, b, m, calls_t<S>{}, casts_t<S>{}, infos_t<S>{})) {
          ++b.unexpected_;
          s.handle_unexpected(std::string_view(m->ops->name, m->ops->name_len));
        }
      }
      if (b.stop_) [[unlikely]]
        return finish(sp, std::move(b.stop_reason_));
      if (b.hibernate_) [[unlikely]] {
        b.hibernate_ = false;
        return continuation(sp);
      }
    }
  }

  template <class... Cs, class... Ms, class... Is>
  static bool dispatch(S& s, server<S>& b, message* m, types<Cs...>, types<Ms...>, types<Is...>) {
    const uint64_t t = m->type;
    if (((t == type_id<call_request<Cs>> && (on_call<Cs>(s, m), true)) || ...)) return true;
    if (((t == type_id<cast_request<Ms>> && (invoke_cast(s, m->as<cast_request<Ms>>().msg), true)) || ...))
      return true;
    if (t == type_id<exit_msg>) {
      exit_msg& e = m->as<exit_msg>();
      if (e.from == b.parent_ || e.from == no_pid) {  // the parent (or the node) ends us
        b.stop_ = true;
        b.stop_reason_ = std::move(e.reason);
        return true;
      }
    }
    return ((t == type_id<Is> && (invoke_info(s, m->as<Is>()), true)) || ...);
  }

  template <class Q>
  static void on_call(S& s, message* m) {
    auto& c = m->as<call_request<Q>>();
    using raw = std::remove_cvref_t<decltype(invoke_call(s, c.req, c.from))>;
    if constexpr (std::is_same_v<raw, noreply_t>) {
      invoke_call(s, c.req, c.from);
    } else if constexpr (!std::is_void_v<typename maybe_reply_value<raw>::type>) {
      raw r = invoke_call(s, c.req, c.from);
      if (r.has_value()) herd::reply(c.from, std::move(*r));
    } else {
      static_assert(!std::is_void_v<raw>,
                    "herd::server: handle_call returns the reply (herd::ok for none), herd::noreply or "
                    "herd::maybe_reply<R>");
      herd::reply(c.from, invoke_call(s, c.req, c.from));
    }
  }
};

template <class S, class... Args>
server_ref<S> start(const server_options& o, bool link_it, Args&&... args) {
  static_assert(std::is_base_of_v<server<S>, S>, "herd::start_server<S>: S must derive from herd::server<S>");
  static_assert(is_types<calls_t<S>>::value && is_types<casts_t<S>>::value && is_types<infos_t<S>>::value,
                "herd::server: calls, casts and infos must be herd::types<...>");
  pid parent = self();
  const bool sync = parent.valid();
  if (sync) mark_mailbox();
  auto body = [](pid par, bool ack, server_options so, std::decay_t<Args>... a) -> hibernation {
    return loop<S>::start(par, ack, std::move(so), std::move(a)...);
  };
  spawn_options so = o.spawn;  // labelled as S, not as the loop's lambda
  so.kind = process_kind::server;
  if (!so.initial_call) so.initial_call = spawn_label<S>();
  pid p = link_it ? spawn_link(so, body, parent, sync, o, std::forward<Args>(args)...)
                  : spawn(so, body, parent, sync, o, std::forward<Args>(args)...);
  if (sync) await_init(p);
  return server_ref<S>{p};
}

}  // namespace detail::srv

// A server's pid that knows the server's class: call and cast are checked
// against what S declares, and call's reply type is S's. Converts to pid.
template <class S>
struct server_ref {
  pid id;

  operator pid() const noexcept { return id; }

  // From a process; as herd::call (throws call_error).
  template <class Req>
  auto call(Req&& req, std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) const {
    using Q = std::decay_t<Req>;
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
    static_assert(detail::srv::in<std::decay_t<Msg>>(detail::srv::casts_t<S>{}),
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
// A constructor that throws then also sends the caller an exit signal.
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

// From a process: turns this process into the server S(args...)
// (gen_server:enter_loop). This is how a server runs under a supervisor:
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
  return detail::srv::loop<S>::start(parent(), false, o, std::decay_t<Args>(std::forward<Args>(args))...);
}
template <class S, class... Args>
  requires(!(std::is_same_v<std::remove_cvref_t<Args>, server_options> || ...))
hibernation serve(Args&&... args) {
  return serve<S>(server_options{}, std::forward<Args>(args)...);
}

// From a process. Stops a server synchronously (gen_server:stop): the stop
// request is taken in order with the server's other messages, terminate(reason)
// runs, and this returns the reason the server exited with (`reason`, unless
// terminate threw or something else ended it first) once it has exited.
// Throws call_error: noproc if there is no such process; timeout if it has not
// exited within `timeout` (the request stays queued; nothing is killed).
exit_reason stop_server(pid server, exit_reason reason = exit_reason::normal(),
                        std::chrono::milliseconds timeout = infinity);

}  // namespace herd
