// See metrics_http.hpp.
#include "metrics_http.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace herd::observer {

int open_metrics_listener(std::string_view addr, uint16_t* port, std::string* error) {
  auto colon = addr.rfind(':');
  const std::string why = "--metrics takes a loopback address, 127.0.0.1:PORT or [::1]:PORT; got '" +
                          std::string(addr) + "'";
  if (colon == std::string_view::npos) {
    *error = why;
    return -1;
  }
  std::string_view host = addr.substr(0, colon), p = addr.substr(colon + 1);
  unsigned v = 0;
  auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
  if (p.empty() || ec != std::errc{} || end != p.data() + p.size() || v > 65535) {
    *error = why;
    return -1;
  }
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (host == "127.0.0.1" || host == "localhost") {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(uint16_t(v));
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof *a;
  } else if (host == "[::1]") {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(uint16_t(v));
    a->sin6_addr = in6addr_loopback;
    len = sizeof *a;
  } else {
    *error = why + " (the metrics endpoint is never exposed beyond this machine)";
    return -1;
  }
  int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("metrics socket: ") + std::strerror(errno);
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, 16) != 0) {
    *error = "metrics endpoint " + std::string(addr) + ": " + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  sockaddr_storage got{};
  socklen_t gl = sizeof got;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&got), &gl);
  *port = ntohs(got.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&got)->sin_port
                                         : reinterpret_cast<sockaddr_in6*>(&got)->sin6_port);
  return fd;
}

std::string http_response(std::string_view head, const std::string& metrics_body) {
  auto status = [](const char* code, const char* type, std::string_view body) {
    std::string r = std::string("HTTP/1.1 ") + code + "\r\nContent-Type: " + type +
                    "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
    r.append(body);
    return r;
  };
  auto eol = head.find("\r\n");
  std::string_view first = head.substr(0, eol);
  if (first.rfind("GET /metrics ", 0) == 0 || first == "GET /metrics")
    return status("200 OK", "text/plain; version=0.0.4; charset=utf-8", metrics_body);
  if (first.rfind("GET ", 0) == 0) return status("404 Not Found", "text/plain", "only /metrics is served\n");
  return status("405 Method Not Allowed", "text/plain", "only GET /metrics is served\n");
}

}  // namespace herd::observer
