// TCP sockets owned by actors, with gen_tcp's active modes.
//
// A tcp_socket is a move-only handle; the process that owns it (the one that
// created it, or was handed it with controlling_process) gets its active-mode
// messages and is the only one that may read, write or change its mode. The
// handle's destructor closes the socket, so a process that dies closes its
// sockets while its stack unwinds.
//
//   auto s = herd::net::tcp_socket::connect("127.0.0.1", port);
//   if (!s) return log(s.error().message());
//   s->send("hello");
//   s->set_active(herd::net::active::once());
//   herd::receive([&](herd::net::tcp_data& d) { ... s->set_active(active::once()); },
//                 [&](const herd::net::tcp_closed&) { ... });
//
// Active modes (gen_tcp's {active, ...}):
//   passive()  no messages; read with recv()
//   once()     one tcp_data (or tcp_closed / tcp_error), then passive until
//              set_active again. Re-arming costs no system call.
//   n(k)       k messages, then tcp_passive and passive; n() adds to a count
//              still running, as inet does (at most 32,767); a total <= 0
//              makes the socket passive and sends tcp_passive.
//   always()   every read becomes a message: NO flow control — a fast peer
//              fills the owner's mailbox as fast as it sends. Prefer once or n.
// One tcp_data carries what one read returned (up to 64 KiB), not a framed
// message: TCP is a byte stream. tcp_closed comes after all data; a reset
// arrives as tcp_error (errc::reset) followed by tcp_closed (inet's
// {show_econnreset, true}).
#pragma once
#include <herd/actors/pid.hpp>
#include <herd/actors/receive.hpp>
#include <herd/net/buffer.hpp>
#include <herd/net/result.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace herd::net {

// Names one socket for its whole life; never reused (a 64-bit serial), so a
// message about a closed socket cannot be mistaken for a new one on the same fd.
struct socket_id {
  uint64_t v = 0;
  friend bool operator==(socket_id, socket_id) = default;
};

// Messages in the owner's mailbox (active modes).
struct tcp_data {
  socket_id sock;
  buffer data;
};
struct tcp_closed {  // the peer closed (read 0) — after all its data
  socket_id sock;
};
struct tcp_error {  // e.g. errc::reset
  socket_id sock;
  error err;
};
struct tcp_passive {  // active::n ran out
  socket_id sock;
};
struct tcp_writable {  // the send buffer has room again (notify_writable)
  socket_id sock;
};

class active {
 public:
  enum class kind : uint8_t { passive, once, n, always };
  static active passive() noexcept { return active(kind::passive, 0); }
  static active once() noexcept { return active(kind::once, 1); }
  // 1..32767 adds to the current count; <= 0 (the total): passive + tcp_passive.
  static active n(int count) noexcept { return active(kind::n, count); }
  static active always() noexcept { return active(kind::always, 0); }
  kind mode() const noexcept { return k_; }
  int count() const noexcept { return n_; }

 private:
  active(kind k, int n) noexcept : k_(k), n_(n) {}
  kind k_;
  int n_;
};

struct socket_options {
  bool nodelay = true;     // TCP_NODELAY
  bool keepalive = false;  // SO_KEEPALIVE
  int sndbuf = 0;          // SO_SNDBUF; 0: the system default
  int rcvbuf = 0;          // SO_RCVBUF; 0: the system default
  // send() queues nothing in user space (it parks until the kernel has taken
  // every byte): memory per socket is bounded by the kernel's send buffer,
  // which `sndbuf` bounds.
};

namespace detail {
struct socket_impl;
}

class tcp_socket {
 public:
  tcp_socket() noexcept = default;
  tcp_socket(tcp_socket&& o) noexcept;
  tcp_socket& operator=(tcp_socket&& o) noexcept;
  tcp_socket(const tcp_socket&) = delete;
  tcp_socket& operator=(const tcp_socket&) = delete;
  ~tcp_socket();  // close()

  // Any thread.
  bool valid() const noexcept { return s_ != nullptr; }
  socket_id id() const noexcept;
  int fd() const noexcept;  // -1 when closed
  herd::pid owner() const noexcept;

  // From a process (elsewhere: herd::not_in_process): connects (non-blocking;
  // the process parks meanwhile — a blocking point) and returns a socket
  // owned by the caller, passive.
  // Host names other than numeric addresses are resolved on the blocking pool.
  static result<tcp_socket> connect(std::string_view host, uint16_t port,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(5),
                                    socket_options o = {});

  // From a process: takes a connected fd (non-blocking or not) and makes it a
  // socket owned by the caller, passive. The fd is closed on failure, and
  // when called outside a process (which throws herd::not_in_process).
  static result<tcp_socket> adopt(int fd, const socket_options& o = {});

  // The rest: from the owner only (errc::not_owner otherwise).

  // See the modes above. Re-arming `once` is one atomic operation.
  result<> set_active(active a);
  // Passive mode only. Waits (parks; a blocking point) until bytes arrive and
  // returns at most `max` of them (0: whatever one read returns, up to
  // 64 KiB). errc::closed at EOF, errc::timeout, errc::reset.
  result<buffer> recv(std::size_t max = 0, std::chrono::milliseconds timeout = herd::infinity);
  // Writes at once; if the kernel's buffer is full, parks until the socket
  // drains (back-pressure; a blocking point) and goes on. Returns when every
  // byte is written or with an error (errc::reset / closed when the peer
  // went away — never SIGPIPE; errc::timeout, after which an unknown prefix
  // of the bytes was sent).
  result<> send(std::string_view bytes, std::chrono::milliseconds timeout = herd::infinity);
  // Writes what the kernel's send buffer takes now and never parks: the
  // number of bytes written, from 0 (the buffer is full: the peer is not
  // reading) to bytes.size(). Errors as send's. For an owner that keeps its
  // own output queue and needs to know how much of it the socket refused.
  result<std::size_t> try_send(std::string_view bytes);
  // For such an owner: one tcp_writable in its mailbox once the kernel's
  // send buffer has room again — at once if it has had room since the last
  // try_send that found it full. One message per call (ask again after the
  // next short try_send); whatever the active mode; also after the peer went
  // away (the next try_send says so). The owner keeps receiving meanwhile
  // instead of parking in send() or polling with a timer.
  result<> notify_writable();
  // Half-close: the peer reads EOF; this side may still receive.
  result<> shutdown_write();
  // Any holder of the handle. Idempotent. Messages already delivered stay.
  // Bytes already sent still reach the peer, then EOF.
  void close() noexcept;
  // Like close, but with a reset (SO_LINGER 0): the kernel drops what it has
  // not sent yet and frees its buffers at once — for a peer being cut off
  // (too slow, misbehaving), whose unread backlog should not outlive it.
  void abort() noexcept;
  // Makes `p` the owner (active-mode messages go to it from now on; one
  // pending readiness follows the ownership). Then move the handle to p in a
  // message. Messages already delivered stay where they are.
  result<> controlling_process(herd::pid p);
  result<> set_options(const socket_options& o);

  // Any thread. "ip:port", or "" when unknown.
  std::string peer() const;
  std::string local() const;

 private:
  explicit tcp_socket(detail::socket_impl* s) noexcept : s_(s) {}
  detail::socket_impl* s_ = nullptr;
};

}  // namespace herd::net
