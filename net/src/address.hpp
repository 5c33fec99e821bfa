// IPv4/IPv6 addresses for connect and bind: parsing, resolving, printing.
#pragma once
#include <herd/net/result.hpp>
#include <herd/net/tcp.hpp>

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace herd::net::detail {

struct sockaddr_any {
  sockaddr_storage ss{};
  socklen_t len = 0;
  const sockaddr* get() const noexcept { return reinterpret_cast<const sockaddr*>(&ss); }
  int family() const noexcept { return ss.ss_family; }
};

// Any thread. A numeric address ("127.0.0.1", "::1", "0.0.0.0", "") or, when
// `resolve` is true, a host name (getaddrinfo — blocking: from a process it
// runs on the blocking pool).
result<sockaddr_any> make_address(std::string_view host, uint16_t port, bool resolve);

// "ip:port" ("[ip]:port" for IPv6); "" if unknown.
std::string format_address(const sockaddr_any& a);

// Applies options to a socket fd; the first failure is returned.
result<> apply_options(int fd, const socket_options& o);

}  // namespace herd::net::detail
