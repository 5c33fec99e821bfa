// herd::net::stream — a non-owning, type-erased reference to a transport
// (transport.hpp): tcp_socket, memory_transport, a TLS transport later. What
// net::protocol's callbacks get, so one compiled module serves connections
// over any transport without being a template (a module's interface is a
// set of virtual functions; it cannot be instantiated per transport by the
// host). Two pointers; copying it copies the reference. The transport must
// outlive it (the connection loop owns the transport and makes the stream).
//
// It is itself a transport (satisfies the concept), so code written as a
// template on the transport can be given a stream too.
//
//   bool on_data(herd::net::stream& s, std::string_view bytes) override {
//     return bool(s.send(bytes));
//   }
#pragma once
#include <herd/net/transport.hpp>

#include <concepts>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>

namespace herd::net {

class stream {
 public:
  template <class T>
    requires(!std::same_as<std::remove_cv_t<T>, stream> && transport<T>)
  explicit stream(T& t) noexcept : t_(&t), ops_(&ops_of<T>) {}

  bool valid() const noexcept { return ops_->valid(t_); }
  socket_id id() const noexcept { return ops_->id(t_); }
  result<> set_active(active a) { return ops_->set_active(t_, a); }
  result<buffer> recv(std::size_t max = 0, std::chrono::milliseconds timeout = herd::infinity) {
    return ops_->recv(t_, max, timeout);
  }
  result<> send(std::string_view bytes, std::chrono::milliseconds timeout = herd::infinity) {
    return ops_->send(t_, bytes, timeout);
  }
  // What the transport takes now without waiting (see tcp_socket::try_send);
  // errc::bad_options on a transport that has no such operation.
  result<std::size_t> try_send(std::string_view bytes) { return ops_->try_send(t_, bytes); }
  result<> shutdown_write() { return ops_->shutdown_write(t_); }
  void close() noexcept { ops_->close(t_); }
  // close() with a reset where the transport has one (tcp_socket::abort).
  void abort() noexcept { ops_->abort(t_); }
  result<> controlling_process(herd::pid p) { return ops_->controlling_process(t_, p); }
  result<> set_options(const socket_options& o) { return ops_->set_options(t_, o); }
  std::string peer() const { return ops_->peer(t_); }
  std::string local() const { return ops_->local(t_); }

  // The transport behind it when it is a T (e.g. tcp_socket, for its fd),
  // else nullptr.
  template <class T>
  T* get() const noexcept {
    // By typeid, not by the ops' address: a module and its host may each
    // have their own copy of ops_of<T>.
    return static_cast<T*>(ops_->cast(t_, typeid(T)));
  }

 private:
  struct ops {
    bool (*valid)(const void*) noexcept;
    socket_id (*id)(const void*) noexcept;
    result<> (*set_active)(void*, active);
    result<buffer> (*recv)(void*, std::size_t, std::chrono::milliseconds);
    result<> (*send)(void*, std::string_view, std::chrono::milliseconds);
    result<std::size_t> (*try_send)(void*, std::string_view);
    result<> (*shutdown_write)(void*);
    void (*close)(void*) noexcept;
    void (*abort)(void*) noexcept;
    result<> (*controlling_process)(void*, herd::pid);
    result<> (*set_options)(void*, const socket_options&);
    std::string (*peer)(const void*);
    std::string (*local)(const void*);
    void* (*cast)(void*, const std::type_info&) noexcept;
  };

  template <class T>
  static T& as(void* p) noexcept {
    return *static_cast<T*>(p);
  }
  template <class T>
  static const T& as(const void* p) noexcept {
    return *static_cast<const T*>(p);
  }

  template <class T>
  static constexpr ops ops_of{
      [](const void* p) noexcept { return as<T>(p).valid(); },
      [](const void* p) noexcept { return as<T>(p).id(); },
      [](void* p, active a) { return as<T>(p).set_active(a); },
      [](void* p, std::size_t n, std::chrono::milliseconds t) { return as<T>(p).recv(n, t); },
      [](void* p, std::string_view b, std::chrono::milliseconds t) { return as<T>(p).send(b, t); },
      [](void* p, std::string_view b) -> result<std::size_t> {
        if constexpr (requires { { as<T>(p).try_send(b) } -> std::same_as<result<std::size_t>>; })
          return as<T>(p).try_send(b);
        else
          return error{errc::bad_options, 0, "try_send: not supported by this transport"};
      },
      [](void* p) { return as<T>(p).shutdown_write(); },
      [](void* p) noexcept { as<T>(p).close(); },
      [](void* p) noexcept {
        if constexpr (requires { as<T>(p).abort(); }) as<T>(p).abort();
        else as<T>(p).close();
      },
      [](void* p, herd::pid to) { return as<T>(p).controlling_process(to); },
      [](void* p, const socket_options& o) { return as<T>(p).set_options(o); },
      [](const void* p) { return as<T>(p).peer(); },
      [](const void* p) { return as<T>(p).local(); },
      [](void* p, const std::type_info& ti) noexcept -> void* { return ti == typeid(T) ? p : nullptr; },
  };

  void* t_;
  const ops* ops_;
};

static_assert(transport<stream>);

}  // namespace herd::net
