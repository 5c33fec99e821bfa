// Making sockets: connect (non-blocking, the caller parks), adopt (an fd the
// listener accepted), and the option / address accessors.
#include "address.hpp"
#include "socket_state.hpp"

#include <herd/actors/process.hpp>
#include <herd/runtime/clock.hpp>
#include <herd/runtime/sched.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

namespace herd::net {
namespace detail {
std::optional<error> check_owner(const socket_impl* s);
}

namespace detail {
// adopt, with the state bits to start from (see make_socket).
result<socket_impl*> adopt_with(int fd, const socket_options& o, uint32_t initial) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0)) {
    int e = errno;
    ::close(fd);
    return error{errc::system, e, "fcntl O_NONBLOCK"};
  }
  if (auto r = apply_options(fd, o); !r) {
    ::close(fd);
    return r.error();
  }
  int err = 0;
  socket_impl* s = make_socket(fd, herd::self(), &err, initial);
  if (!s) {
    ::close(fd);
    return error{errc::system, err, "epoll_ctl ADD"};
  }
  s->opts = o;
  return s;
}
}  // namespace detail

result<tcp_socket> tcp_socket::adopt(int fd, const socket_options& o) {
  try {
    herd::detail::require_process("herd::net::tcp_socket::adopt");  // the caller becomes the owner
  } catch (...) {
    ::close(fd);  // as on every other failure: the fd is ours now
    throw;
  }
  auto r = detail::adopt_with(fd, o, detail::st::writable);
  if (!r) return r.error();
  return tcp_socket(*r);
}

result<tcp_socket> tcp_socket::connect(std::string_view host, uint16_t port, std::chrono::milliseconds timeout,
                                       socket_options o) {
  herd::detail::require_process("herd::net::tcp_socket::connect");  // the caller becomes the owner
  auto addr = detail::make_address(host, port, true);
  if (!addr) return addr.error();
  int fd = ::socket(addr->family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return error{errc::system, errno, "socket"};
  std::string where = std::string(host) + ":" + std::to_string(port);
  // connect() before the epoll registration: EPOLL_CTL_ADD then reports the
  // socket's real state, and the handshake's end is an edge of its own (a
  // socket registered before connect() reports a stale EPOLLOUT|EPOLLHUP).
  int rc;
  do {
    rc = ::connect(fd, addr->get(), addr->len);
  } while (rc != 0 && errno == EINTR);
  int e = rc == 0 ? 0 : errno;
  if (rc != 0 && e != EINPROGRESS) {
    ::close(fd);
    if (e == ECONNREFUSED) return error{errc::refused, e, "connect " + where};
    return error{errc::system, e, "connect " + where};
  }
  auto made = detail::adopt_with(fd, o, rc == 0 ? detail::st::writable : 0);
  if (!made) return made.error();
  tcp_socket s(*made);
  if (rc != 0) {
    uint64_t deadline = timeout == herd::infinity ? rt::no_deadline : rt::deadline_after(timeout);
    for (;;) {
      // Writable means connected, or failed (SO_ERROR says which).
      bool ready = detail::wait_for(s.s_, detail::st::writable, deadline);
      int soerr = 0;
      socklen_t len = sizeof soerr;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
      if (soerr == ECONNREFUSED) return error{errc::refused, soerr, "connect " + where};
      if (soerr != 0) return error{errc::system, soerr, "connect " + where};
      sockaddr_storage peer{};
      socklen_t plen = sizeof peer;
      if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &plen) == 0) break;  // connected
      if (!ready) return error{errc::timeout, ETIMEDOUT, "connect " + where};
      s.s_->state.fetch_and(~detail::st::writable, std::memory_order_seq_cst);  // not yet: wait again
    }
    s.s_->state.fetch_or(detail::st::writable, std::memory_order_seq_cst);
  }
  return s;
}

result<> tcp_socket::set_options(const socket_options& o) {
  if (auto e = detail::check_owner(s_)) return *e;
  if (auto r = detail::apply_options(s_->fd, o); !r) return r;
  s_->opts = o;
  return {};
}

std::string tcp_socket::peer() const {
  if (!s_ || s_->fd < 0) return "";
  detail::sockaddr_any a;
  a.len = sizeof a.ss;
  if (getpeername(s_->fd, reinterpret_cast<sockaddr*>(&a.ss), &a.len) != 0) return "";
  return detail::format_address(a);
}

std::string tcp_socket::local() const {
  if (!s_ || s_->fd < 0) return "";
  detail::sockaddr_any a;
  a.len = sizeof a.ss;
  if (getsockname(s_->fd, reinterpret_cast<sockaddr*>(&a.ss), &a.len) != 0) return "";
  return detail::format_address(a);
}

}  // namespace herd::net
