// The loop of herd::server (see <herd/actors/server.hpp>, which includes this
// file after the vocabulary it uses: types, noreply, maybe_reply, ok,
// server_options and the declaration of server<S>): receive, dispatch by
// type id, reply, hibernate, terminate; and the synchronous start.
#pragma once

namespace herd::detail::srv {

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

// The reply type of S's call of Q: what the handler returns (a C string as
// std::string, as reply sends it), herd::ok for a handler that returns void
// (gen_server's {reply, ok, State}), R for maybe_reply<R>, void for noreply.
template <class S, class Q>
struct reply_of {
  using raw = std::remove_cvref_t<decltype(invoke_call(std::declval<S&>(), std::declval<Q&>(), std::declval<const from&>()))>;
  using type = std::conditional_t<
      std::is_same_v<raw, noreply_t>, void,
      std::conditional_t<std::is_void_v<raw>, ok,
                         std::conditional_t<std::is_void_v<typename maybe_reply_value<raw>::type>, message_type_t<raw>,
                                            typename maybe_reply_value<raw>::type>>>;
};

// In server.cpp. Inside a catch block: the current exception as an exit
// reason (the same the runtime gives a process it ends).
exit_reason current_exception_reason();
// From a process: waits for `who`'s init_ack (after mark); throws init_error.
void await_init(pid who);
// The default handle_unexpected: one line to herd's logger.
void log_unexpected(std::string_view type_name) noexcept;

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
    } else if constexpr (std::is_void_v<raw>) {
      invoke_call(s, c.req, c.from);
      herd::reply(c.from, ok{});
    } else {
      herd::reply(c.from, invoke_call(s, c.req, c.from));
    }
  }
};

template <class S, class... Args>
server_ref<S> start(const server_options& o, bool link_it, Args&&... args) {
  static_assert(std::is_base_of_v<server<S>, S>, "herd::start_server<S>: S must derive from herd::server<S>");
  static_assert(is_types<calls_t<S>>::value && is_types<casts_t<S>>::value && is_types<infos_t<S>>::value,
                "herd::server: calls, casts and infos must be herd::types<...>");
  if (link_it) require_process("herd::start_server_link");  // the link's other end is the caller
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

}  // namespace herd::detail::srv
