// The transport seam (Ranch's ranch_transport): what a connection handler
// needs from a byte stream, so a TLS transport can be added later without
// touching handlers. tcp_socket and memory_transport (memory_transport.hpp,
// an in-memory pair) are the transports today; net::stream (stream.hpp) is a
// type-erased reference to either, and a transport itself.
//
// A transport is a move-only handle owned by one process that provides the
// operations below with tcp_socket's meaning, and delivers its active-mode
// input as the same four messages (tcp_data, tcp_closed, tcp_error,
// tcp_passive — named "tcp" for history, as in Ranch's {tcp, ...} tuples
// being matched through transport:messages()). A TLS transport would read
// and decrypt in the owner's context: the readiness notification is
// materialized on the owner's fiber (see net/src/socket.cpp), which is where
// a TLS record layer needs to run.
#pragma once
#include <herd/actors/pid.hpp>
#include <herd/net/buffer.hpp>
#include <herd/net/result.hpp>
#include <herd/net/tcp.hpp>

#include <chrono>
#include <concepts>
#include <cstddef>
#include <string>
#include <string_view>

namespace herd::net {

template <class T>
concept transport = std::movable<T> && requires(T& t, const T& ct, std::string_view bytes,
                                                std::chrono::milliseconds ms, active a, herd::pid p,
                                                std::size_t n, const socket_options& o) {
  { ct.valid() } -> std::same_as<bool>;
  { ct.id() } -> std::same_as<socket_id>;
  { t.set_active(a) } -> std::same_as<result<>>;
  { t.recv(n, ms) } -> std::same_as<result<buffer>>;
  { t.send(bytes, ms) } -> std::same_as<result<>>;
  { t.shutdown_write() } -> std::same_as<result<>>;
  { t.close() };
  { t.controlling_process(p) } -> std::same_as<result<>>;
  { t.set_options(o) } -> std::same_as<result<>>;
  { ct.peer() } -> std::same_as<std::string>;
  { ct.local() } -> std::same_as<std::string>;
};

static_assert(transport<tcp_socket>);

}  // namespace herd::net
