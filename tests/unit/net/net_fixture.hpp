// Helpers for the net tests: a raw client socket for the peer side (plain
// blocking POSIX calls, usable from a test thread or a process), and small
// waits. Everything is 127.0.0.1 and bounded.
#pragma once
#include <herd/actors.hpp>
#include <herd/net.hpp>

#include "support/node_fixture.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <string>

namespace net_test {

using namespace std::chrono_literals;

// A plain blocking client socket (the peer). Any thread.
struct raw_client {
  int fd = -1;
  raw_client() = default;
  explicit raw_client(uint16_t port, bool nodelay = true) { connect(port, nodelay); }
  raw_client(raw_client&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
  raw_client& operator=(raw_client&& o) noexcept {
    close();
    fd = std::exchange(o.fd, -1);
    return *this;
  }
  ~raw_client() { close(); }
  bool connect(uint16_t port, bool nodelay = true) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd);
      fd = -1;
      return false;
    }
    int one = nodelay ? 1 : 0;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return true;
  }
  bool send_all(std::string_view s) const {
    while (!s.empty()) {
      ssize_t n = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      s.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  // Reads exactly n bytes (or fewer at EOF / timeout).
  std::string recv_n(std::size_t n, int timeout_ms = 5000) const {
    std::string out;
    auto t0 = std::chrono::steady_clock::now();
    while (out.size() < n) {
      pollfd p{fd, POLLIN, 0};
      int left = timeout_ms - int(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::steady_clock::now() - t0).count());
      if (left <= 0 || ::poll(&p, 1, left) <= 0) break;
      char buf[4096];  // small: this may run on a process's 64 KiB stack
      ssize_t r = ::recv(fd, buf, std::min(sizeof buf, n - out.size()), 0);
      if (r <= 0) break;
      out.append(buf, static_cast<std::size_t>(r));
    }
    return out;
  }
  // True when the peer closed (EOF) within the timeout.
  bool wait_eof(int timeout_ms = 5000) const {
    auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      pollfd p{fd, POLLIN, 0};
      int left = timeout_ms - int(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::steady_clock::now() - t0).count());
      if (left <= 0 || ::poll(&p, 1, left) <= 0) return false;
      char buf[1024];
      ssize_t r = ::recv(fd, buf, sizeof buf, 0);
      if (r == 0) return true;
      if (r < 0 && errno != EAGAIN) return true;
    }
  }
  // Closes with an RST (SO_LINGER 0).
  void reset() {
    linger l{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close();
  }
  void close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

// A listening raw socket on 127.0.0.1:0 (the peer side of connect tests).
struct raw_listener {
  int fd = -1;
  uint16_t port = 0;
  explicit raw_listener(int backlog = 128) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd, backlog);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~raw_listener() {
    if (fd >= 0) ::close(fd);
  }
  // Blocking accept with a timeout; -1 on timeout.
  int accept(int timeout_ms = 5000) const {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return -1;
    return ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
  }
};

// From a process: a connected pair — `mine` owned by the caller, the peer
// side as a raw fd (blocking) wrapped in raw_client.
struct socket_pair {
  herd::net::tcp_socket mine;
  raw_client peer;
};
inline socket_pair connected_pair() {
  raw_listener l;
  auto s = herd::net::tcp_socket::connect("127.0.0.1", l.port, 5s);
  socket_pair p;
  if (!s) return p;
  p.mine = std::move(*s);
  p.peer.fd = l.accept();
  int one = 1;
  setsockopt(p.peer.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return p;
}

inline herd::node_options node_opts(unsigned workers = 2) {
  herd::node_options o = herd::test::opts(workers);
  return o;
}

}  // namespace net_test
