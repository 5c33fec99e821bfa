// What a supervisor knows about a child: OTP's child specification, in C++.
//
//   namespace sup = herd::supervisor;
//   sup::child_spec db{.id = "db", .start = [] { db_loop(); }};
//   sup::child_spec conn{.id = "conn", .start = [](int fd, std::string peer) { serve(fd, peer); },
//                        .restart = sup::temporary, .shutdown = sup::brutal_kill};
//
// `start` runs in the child process: the supervisor spawns it linked to
// itself. It takes no arguments, or — under simple_one_for_one — the extra
// arguments given to start_child (checked against its parameter types: a
// mismatch is refused with errc::bad_args). It returns void, or
// herd::hibernation like any process function.
#pragma once
#include <herd/actors/links.hpp>
#include <herd/actors/message.hpp>
#include <herd/actors/pid.hpp>
#include <herd/actors/receive.hpp>
#include <herd/actors/spawn.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

namespace herd::supervisor {

// When a child that ended is started again.
enum class restart_type : uint8_t {
  permanent,  // always
  transient,  // only after an abnormal exit (not normal, not shutdown)
  temporary,  // never; its spec is removed when it ends
};
inline constexpr restart_type permanent = restart_type::permanent;
inline constexpr restart_type transient = restart_type::transient;
inline constexpr restart_type temporary = restart_type::temporary;

// A `supervisor` child is a herd supervisor (its start function calls
// supervisor::run, as supervisor_spec's does): its parent waits until its own
// children are up before it goes on (OTP's synchronous start), and its
// default shutdown is infinity.
enum class child_type : uint8_t { worker, supervisor };

struct brutal_kill_t {};
inline constexpr brutal_kill_t brutal_kill{};

// How a child is stopped: brutal_kill (exit(child, kill) at once), a timeout
// (exit(child, shutdown), then kill when it has not ended in time), or
// herd::infinity (wait as long as it takes). Default: 5000 ms for a worker,
// infinity for a supervisor (OTP's defaults).
class shutdown_spec {
 public:
  enum kind_t : uint8_t { by_type, kill_at_once, timeout, wait_forever };

  constexpr shutdown_spec() = default;
  constexpr shutdown_spec(brutal_kill_t) : kind_(kill_at_once) {}
  template <class Rep, class Period>
  constexpr shutdown_spec(std::chrono::duration<Rep, Period> d)
      : kind_(timeout), ms_(std::chrono::ceil<std::chrono::milliseconds>(d)) {
    if (ms_.count() < 0) ms_ = std::chrono::milliseconds(0);
    if (ms_ >= herd::infinity) kind_ = wait_forever;
  }

  // A bare number has no unit: refused at compile time.
  template <class N>
    requires std::is_arithmetic_v<N>
  shutdown_spec(N) {
    static_assert(!std::is_arithmetic_v<N>,
                  "herd::supervisor: a shutdown is a std::chrono duration (using namespace std::chrono_literals; "
                  ".shutdown = 5s), herd::supervisor::brutal_kill or herd::infinity - not a bare number");
  }

  constexpr kind_t kind() const noexcept { return kind_; }
  constexpr std::chrono::milliseconds timeout_ms() const noexcept { return ms_; }
  // by_type resolved: what a child of type t gets.
  constexpr shutdown_spec resolved(child_type t) const noexcept {
    if (kind_ != by_type) return *this;
    return t == child_type::supervisor ? shutdown_spec(herd::infinity) : shutdown_spec(std::chrono::milliseconds(5000));
  }

 private:
  kind_t kind_ = by_type;
  std::chrono::milliseconds ms_{0};
};

namespace detail {
// Extra arguments are stored decayed; string literals become std::string.
template <class T>
using arg_t = std::conditional_t<std::is_same_v<std::decay_t<T>, const char*> || std::is_same_v<std::decay_t<T>, char*>,
                                 std::string, std::decay_t<T>>;

template <class Tuple>
inline constexpr uint64_t tuple_id = herd::detail::type_id<Tuple>;

template <class F>
struct params : params<decltype(&F::operator())> {};
template <class C, class R, class... A>
struct params<R (C::*)(A...)> { using tuple = std::tuple<std::decay_t<A>...>; };
template <class C, class R, class... A>
struct params<R (C::*)(A...) const> { using tuple = std::tuple<std::decay_t<A>...>; };
template <class C, class R, class... A>
struct params<R (C::*)(A...) noexcept> { using tuple = std::tuple<std::decay_t<A>...>; };
template <class C, class R, class... A>
struct params<R (C::*)(A...) const noexcept> { using tuple = std::tuple<std::decay_t<A>...>; };
template <class R, class... A>
struct params<R (*)(A...)> { using tuple = std::tuple<std::decay_t<A>...>; };
template <class R, class... A>
struct params<R (*)(A...) noexcept> { using tuple = std::tuple<std::decay_t<A>...>; };
template <class R, class... A>
struct params<R(A...)> { using tuple = std::tuple<std::decay_t<A>...>; };
}  // namespace detail

// The extra arguments of a dynamic child (simple_one_for_one's start_child).
// Immutable and shared: a restarted child gets a fresh copy of the same ones.
class child_args {
 public:
  child_args() = default;  // none
  template <class... A>
  static child_args of(A&&... a) {
    using T = std::tuple<detail::arg_t<A>...>;
    child_args r;
    r.type_ = detail::tuple_id<T>;
    r.type_name_ = herd::detail::type_name<T>();
    if constexpr (sizeof...(A) > 0) r.data_ = std::make_shared<const T>(std::forward<A>(a)...);
    return r;
  }
  uint64_t type() const noexcept { return type_; }
  std::string_view type_name() const noexcept { return type_name_; }
  // The stored tuple, when it is a T (nullptr for no arguments).
  template <class T>
  const T* get() const noexcept {
    return type_ == detail::tuple_id<T> ? static_cast<const T*>(data_.get()) : nullptr;
  }

 private:
  std::shared_ptr<const void> data_;
  uint64_t type_ = detail::tuple_id<std::tuple<>>;
  std::string_view type_name_ = herd::detail::type_name<std::tuple<>>();
};

// A child's start function, type-erased and cheap to copy. Built implicitly
// from a callable: `.start = [] { loop(); }` or `.start = [](int n) { ... }`.
class start_function {
 public:
  start_function() = default;

  template <class F>
    requires(!std::is_same_v<std::decay_t<F>, start_function>)
  start_function(F&& f) : impl_(std::make_shared<const impl<std::decay_t<F>>>(std::forward<F>(f))) {}

  explicit operator bool() const noexcept { return static_cast<bool>(impl_); }
  // The argument types it takes, as child_args::type() names them.
  uint64_t args_type() const noexcept { return impl_ ? impl_->args_type() : 0; }
  std::string_view args_type_name() const noexcept { return impl_ ? impl_->args_type_name() : std::string_view{}; }

  // From a process: spawns the function (with a copy of `a`) linked to the
  // caller. The caller has checked a.type() == args_type(). Throws
  // spawn_error when no process can be created.
  pid spawn_linked(const spawn_options& o, const child_args& a) const { return impl_->spawn(o, a); }

 private:
  struct base {
    virtual ~base() = default;
    virtual uint64_t args_type() const noexcept = 0;
    virtual std::string_view args_type_name() const noexcept = 0;
    virtual pid spawn(const spawn_options& o, const child_args& a) const = 0;
  };

  template <class F>
  struct impl final : base {
    using tuple = std::conditional_t<std::is_invocable_v<F&>, std::tuple<>, typename detail::params<F>::tuple>;
    template <class G>
    explicit impl(G&& g) : fn(std::forward<G>(g)) {}
    uint64_t args_type() const noexcept override { return detail::tuple_id<tuple>; }
    std::string_view args_type_name() const noexcept override { return herd::detail::type_name<tuple>(); }
    pid spawn(const spawn_options& o, const child_args& a) const override {
      if constexpr (std::tuple_size_v<tuple> == 0) {
        return herd::spawn_link(o, fn);
      } else {
        const tuple* t = a.get<tuple>();
        spawn_options named = o;  // the user's function, not the wrapper below
        if (!named.initial_call) named.initial_call = herd::detail::spawn_label<F>();
        return herd::spawn_link(named, [f = fn, args = *t]() mutable -> decltype(auto) {
          return std::apply(f, std::move(args));
        });
      }
    }
    F fn;
  };

  std::shared_ptr<const base> impl_;
};

struct child_spec {
  std::string id;                // unique among the supervisor's children
  start_function start;          // runs in the child process
  restart_type restart = restart_type::permanent;
  shutdown_spec shutdown{};      // default: 5000 ms (worker), infinity (supervisor)
  child_type type = child_type::worker;
  std::string registered_name{}; // register every instance under this name
  std::size_t stack_size = 0;    // 0: the node's default
  priority prio = priority::normal;
  // The observer's labels for the child process (spawn_options): a worker's
  // kind (a supervisor child is always `supervisor`), and what it runs — a
  // string literal; nullptr: the start function's C++ type.
  process_kind kind = process_kind::worker;
  const char* initial_call = nullptr;
};

}  // namespace herd::supervisor
