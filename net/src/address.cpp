#include "address.hpp"

#include <herd/actors/process.hpp>
#include <herd/net/tcp.hpp>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <cerrno>
#include <cstring>

namespace herd::net::detail {

result<sockaddr_any> make_address(std::string_view host, uint16_t port, bool resolve) {
  sockaddr_any a;
  std::string h(host);
  if (h.empty()) h = "0.0.0.0";
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  auto* v4 = reinterpret_cast<sockaddr_in*>(&a.ss);
  if (inet_pton(AF_INET, h.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    a.len = sizeof(sockaddr_in);
    return a;
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&a.ss);
  if (inet_pton(AF_INET6, h.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    a.len = sizeof(sockaddr_in6);
    return a;
  }
  if (!resolve) return error{errc::bad_address, 0, "not a numeric IP address: \"" + h + "\""};
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = herd::blocking([&] { return getaddrinfo(h.c_str(), nullptr, &hints, &res); });
  if (rc != 0 || !res) return error{errc::bad_address, 0, "cannot resolve \"" + h + "\": " + gai_strerror(rc)};
  std::memcpy(&a.ss, res->ai_addr, res->ai_addrlen);
  a.len = res->ai_addrlen;
  freeaddrinfo(res);
  if (a.family() == AF_INET) reinterpret_cast<sockaddr_in*>(&a.ss)->sin_port = htons(port);
  else reinterpret_cast<sockaddr_in6*>(&a.ss)->sin6_port = htons(port);
  return a;
}

std::string format_address(const sockaddr_any& a) {
  char ip[INET6_ADDRSTRLEN] = {};
  if (a.family() == AF_INET) {
    auto* v4 = reinterpret_cast<const sockaddr_in*>(&a.ss);
    inet_ntop(AF_INET, &v4->sin_addr, ip, sizeof ip);
    return std::string(ip) + ":" + std::to_string(ntohs(v4->sin_port));
  }
  if (a.family() == AF_INET6) {
    auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a.ss);
    inet_ntop(AF_INET6, &v6->sin6_addr, ip, sizeof ip);
    // Appended, not "[" + std::string(ip): GCC 12 warns falsely (-Wrestrict) on that form.
    std::string out = "[";
    out += ip;
    out += "]:";
    out += std::to_string(ntohs(v6->sin6_port));
    return out;
  }
  return "";
}

result<> apply_options(int fd, const socket_options& o) {
  auto set = [fd](int level, int name, int v, const char* what) -> result<> {
    if (setsockopt(fd, level, name, &v, sizeof v) != 0) return error{errc::system, errno, what};
    return {};
  };
  if (o.sndbuf < 0 || o.rcvbuf < 0) return error{errc::bad_options, 0, "sndbuf/rcvbuf must be >= 0"};
  if (auto r = set(IPPROTO_TCP, TCP_NODELAY, o.nodelay ? 1 : 0, "setsockopt TCP_NODELAY"); !r) return r;
  if (o.keepalive)
    if (auto r = set(SOL_SOCKET, SO_KEEPALIVE, 1, "setsockopt SO_KEEPALIVE"); !r) return r;
  if (o.sndbuf > 0)
    if (auto r = set(SOL_SOCKET, SO_SNDBUF, o.sndbuf, "setsockopt SO_SNDBUF"); !r) return r;
  if (o.rcvbuf > 0)
    if (auto r = set(SOL_SOCKET, SO_RCVBUF, o.rcvbuf, "setsockopt SO_RCVBUF"); !r) return r;
  return {};
}

}  // namespace herd::net::detail

namespace herd::net {

const char* to_string(errc e) noexcept {
  switch (e) {
    case errc::closed: return "closed";
    case errc::timeout: return "timeout";
    case errc::reset: return "reset";
    case errc::not_owner: return "not_owner";
    case errc::would_exceed: return "would_exceed";
    case errc::bad_address: return "bad_address";
    case errc::system: return "system";
    case errc::in_use: return "in_use";
    case errc::not_found: return "not_found";
    case errc::refused: return "refused";
    case errc::bad_options: return "bad_options";
    case errc::not_connected: return "not_connected";
  }
  return "unknown";
}

std::string error::message() const {
  std::string m = to_string(code);
  if (!detail.empty()) m += ": " + detail;
  if (sys) {
    char buf[128];
    m += ": ";
    m += strerror_r(sys, buf, sizeof buf);
  }
  return m;
}

}  // namespace herd::net
