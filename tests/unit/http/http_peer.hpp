// The client side of the server tests: a raw socket that writes exactly
// the bytes a test gives and reads responses back (Content-Length or
// chunked). Plain blocking POSIX calls with poll timeouts: run it off the
// workers (herd::blocking) or on a plain thread.
#pragma once
#include "net_fixture.hpp"

#include <cstdlib>
#include <optional>
#include <string>

namespace http_test {

struct reply {
  int status = 0;
  std::string head;  // status line and headers, as sent
  std::string body;  // de-chunked
  bool has(std::string_view header_line) const { return head.find(header_line) != std::string::npos; }
};

struct peer {
  net_test::raw_client c;
  std::string buf;  // read, not yet consumed

  explicit peer(uint16_t port) : c(port) {}
  bool send(std::string_view s) { return c.send_all(s); }

  // Reads more into buf; false at EOF, error or timeout.
  bool fill(int timeout_ms) {
    pollfd p{c.fd, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return false;
    char tmp[4096];
    ssize_t n = ::recv(c.fd, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<std::size_t>(n));
    return true;
  }
  // The next `n` bytes exactly (nullopt: fewer came).
  std::optional<std::string> take(std::size_t n, int timeout_ms) {
    while (buf.size() < n)
      if (!fill(timeout_ms)) return std::nullopt;
    std::string out = buf.substr(0, n);
    buf.erase(0, n);
    return out;
  }
  std::optional<std::string> line(int timeout_ms) {
    std::size_t e;
    while ((e = buf.find("\r\n")) == std::string::npos)
      if (!fill(timeout_ms)) return std::nullopt;
    std::string out = buf.substr(0, e);
    buf.erase(0, e + 2);
    return out;
  }
  // One response (nullopt: the connection ended or nothing came in time).
  std::optional<reply> read(int timeout_ms = 10000, bool head_request = false) {
    reply r;
    std::size_t e;
    while ((e = buf.find("\r\n\r\n")) == std::string::npos)
      if (!fill(timeout_ms)) return std::nullopt;
    r.head = buf.substr(0, e + 2);
    buf.erase(0, e + 4);
    if (r.head.size() < 12) return std::nullopt;
    r.status = std::atoi(r.head.c_str() + 9);
    if (head_request || r.status < 200 || r.status == 204 || r.status == 304) return r;
    if (r.has("Transfer-Encoding: chunked")) {
      for (;;) {
        auto size_line = line(timeout_ms);
        if (!size_line) return std::nullopt;
        std::size_t n = std::strtoul(size_line->c_str(), nullptr, 16);
        if (n == 0) {
          if (!line(timeout_ms)) return std::nullopt;  // no trailers from this server
          return r;
        }
        auto chunk = take(n + 2, timeout_ms);
        if (!chunk) return std::nullopt;
        r.body += chunk->substr(0, n);
      }
    }
    auto cl = r.head.find("Content-Length: ");
    if (cl == std::string::npos) return std::nullopt;
    auto body = take(std::strtoul(r.head.c_str() + cl + 16, nullptr, 10), timeout_ms);
    if (!body) return std::nullopt;
    r.body = *body;
    return r;
  }
  // True when the server closed the connection (EOF) with nothing more sent.
  bool closed(int timeout_ms = 10000) { return buf.empty() && c.wait_eof(timeout_ms); }
};

}  // namespace http_test
