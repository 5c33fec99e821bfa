// An in-memory transport: a connected pair of byte streams between two
// processes of this node, with tcp_socket's meanings (see tcp.hpp and
// transport.hpp) and no file descriptor, thread or poller behind it. For
// tests, simulations and measurements of protocols that would otherwise need
// a kernel socket per connection (a million idle sessions on one node).
//
//   auto [a, b] = *herd::net::memory_pair();       // both owned by the caller
//   b.controlling_process(peer);                   // then send b to peer
//   a.send("hello");                               // peer: tcp_data{b.id(), "hello"}
//
//   // or: a connection process per pair, as start_listener makes them
//   auto c = herd::net::memory_connect([](herd::net::memory_transport s) { ... });
//
// Meanings, as tcp_socket's:
// * Active modes (once / n / passive / always) deliver tcp_data (at most
//   64 KiB each), tcp_closed after all data, tcp_error{reset} (the peer
//   aborted) followed by tcp_closed, and tcp_passive, to the owner.
// * Each direction has a bounded buffer (memory_options::buffer_bytes, the
//   kernel's socket buffers' role). send() copies what fits and, when the
//   buffer is full, parks the sending process until the reader takes bytes
//   (back-pressure: never a spin, never a blocked worker); errc::timeout
//   after its timeout, errc::reset when the reader's end is closed. Bytes
//   delivered as messages have left the buffer: `always` has no flow control,
//   as with TCP.
// * close(): the peer reads what was sent, then EOF (tcp_closed). A process
//   that dies closes its ends as its stack unwinds (the handle's destructor).
//   abort(): the peer gets tcp_error{reset} + tcp_closed; unread bytes drop.
// * shutdown_write(): half-close; this end may still read.
// * Ids are never reused, and never equal a tcp_socket's (a serial of their
//   own, from 2^62 up).
//
// Cost: a pair is one allocation of about 200 bytes while idle (each
// direction's buffer is freed whenever it empties); the handle is 16 bytes.
#pragma once
#include <herd/actors/pid.hpp>
#include <herd/actors/receive.hpp>
#include <herd/net/buffer.hpp>
#include <herd/net/result.hpp>
#include <herd/net/tcp.hpp>
#include <herd/net/transport.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

namespace herd::net {

namespace detail {
struct memory_pipe;
}

struct memory_options {
  // Bytes each direction holds before send() waits (1 .. 16 MiB).
  std::size_t buffer_bytes = 64 * 1024;
};

class memory_transport {
 public:
  memory_transport() noexcept = default;
  memory_transport(memory_transport&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), side_(o.side_) {}
  memory_transport& operator=(memory_transport&& o) noexcept;
  memory_transport(const memory_transport&) = delete;
  memory_transport& operator=(const memory_transport&) = delete;
  ~memory_transport();  // close()

  // Any thread.
  bool valid() const noexcept { return p_ != nullptr; }
  socket_id id() const noexcept;
  herd::pid owner() const noexcept;

  // From the owner only (errc::not_owner otherwise), as tcp_socket's.
  result<> set_active(active a);
  result<buffer> recv(std::size_t max = 0, std::chrono::milliseconds timeout = herd::infinity);
  result<> send(std::string_view bytes, std::chrono::milliseconds timeout = herd::infinity);
  // What fits in the peer's buffer now, never parking (0 .. bytes.size()).
  result<std::size_t> try_send(std::string_view bytes);
  result<> shutdown_write();
  result<> controlling_process(herd::pid p);
  // sndbuf > 0 sets this direction's buffer (as buffer_bytes); the rest of
  // the TCP options mean nothing here and are accepted.
  result<> set_options(const socket_options& o);

  // Any holder. Idempotent.
  void close() noexcept;
  void abort() noexcept;

  // Any thread: "memory:<this id>" / "memory:<the peer's id>".
  std::string peer() const;
  std::string local() const;

 private:
  friend struct detail::memory_pipe;
  memory_transport(detail::memory_pipe* p, uint8_t side) noexcept : p_(p), side_(side) {}
  detail::memory_pipe* p_ = nullptr;
  uint8_t side_ = 0;
};

struct memory_pair_ends {
  memory_transport first;
  memory_transport second;
};

// From a process (elsewhere: herd::not_in_process): a connected pair, both
// ends owned by the caller, passive. errc::bad_options for a buffer size out
// of range.
result<memory_pair_ends> memory_pair(memory_options o = {});

// From a process: a connected pair whose second end goes to a new process
// running `handler` (as start_listener hands a connection to its handler:
// the process owns the end, passive; it ends when the handler returns). The
// first end is returned, owned by the caller. No supervisor, no connection
// limit: the caller links or monitors the process if it cares
// (memory_connected::server).
struct memory_connected {
  memory_transport client;
  herd::pid server = herd::no_pid;
};
using memory_handler = std::function<void(memory_transport)>;
result<memory_connected> memory_connect(memory_handler handler, memory_options o = {});

static_assert(transport<memory_transport>);

}  // namespace herd::net
