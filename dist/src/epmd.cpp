#include "epmd.hpp"

#include <herd/actors/process.hpp>

#include <cstdlib>
#include <spawn.h>
#include <sys/wait.h>

#include "bytes.hpp"

extern char** environ;

namespace herd::dist::detail {

namespace {

constexpr uint8_t alive2_req = 120, alive2_resp = 121, alive2_x_resp = 118;
constexpr uint8_t port_please2_req = 122, port2_resp = 119;

std::string with_length(std::string body) {
  std::string s;
  put16(s, uint32_t(body.size()));
  return s + body;
}

result<std::string> read_exact(net::tcp_socket& s, std::size_t n, std::chrono::milliseconds timeout) {
  std::string out;
  while (out.size() < n) {
    auto b = s.recv(n - out.size(), timeout);
    if (!b) return error{errc::epmd, "epmd: " + b.error().message()};
    out.append(b->view());
  }
  return out;
}

// erl starts epmd the same way when none answers.
bool start_epmd_daemon() {
  return herd::blocking([] {
    const char* argv[] = {"epmd", "-daemon", nullptr};
    ::pid_t child = 0;
    if (::posix_spawnp(&child, "epmd", nullptr, nullptr, const_cast<char* const*>(argv), environ) != 0)
      return false;
    int status = 0;
    ::waitpid(child, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  });
}

}  // namespace

uint16_t epmd_port() {
  if (const char* p = std::getenv("ERL_EPMD_PORT")) {
    long v = std::strtol(p, nullptr, 10);
    if (v > 0 && v < 65536) return uint16_t(v);
  }
  return 4369;
}

result<published> epmd_publish(std::string_view alive, uint16_t port, bool hidden) {
  auto s = net::tcp_socket::connect("127.0.0.1", epmd_port(), std::chrono::seconds(2));
  if (!s) {
    if (!start_epmd_daemon()) return error{errc::epmd, "no epmd answers and `epmd -daemon` failed (is epmd on PATH?)"};
    // The daemon forks before it listens: retry for a while.
    for (int i = 0; i < 100 && !s; ++i) {
      herd::sleep(std::chrono::milliseconds(50));
      s = net::tcp_socket::connect("127.0.0.1", epmd_port(), std::chrono::seconds(2));
    }
    if (!s) return error{errc::epmd, "epmd started but does not answer on port " + std::to_string(epmd_port())};
  }
  std::string req;
  req += char(alive2_req);
  put16(req, port);
  req += char(hidden ? 72 : 77);  // 'H' hidden, 'M' normal node
  req += char(0);                 // TCP/IPv4
  put16(req, 6);                  // highest and lowest protocol version we speak
  put16(req, 6);
  put16(req, uint32_t(alive.size()));
  req += alive;
  put16(req, 0);  // no extra
  if (auto r = s->send(with_length(req)); !r) return error{errc::epmd, "epmd: " + r.error().message()};
  auto head = read_exact(*s, 2, std::chrono::seconds(5));
  if (!head) return head.error();
  uint8_t tag = uint8_t((*head)[0]), res = uint8_t((*head)[1]);
  if ((tag != alive2_resp && tag != alive2_x_resp) || res != 0)
    return error{errc::epmd, "epmd refused the name " + std::string(alive) + " (result " + std::to_string(res) +
                                 "): is a node of that name already running?"};
  auto c = read_exact(*s, tag == alive2_x_resp ? 4 : 2, std::chrono::seconds(5));
  if (!c) return c.error();
  published p;
  p.creation = tag == alive2_x_resp ? get32(*c, 0) : get16(*c, 0);
  if (p.creation == 0) p.creation = 1;
  p.sock = std::move(*s);
  return p;
}

result<node_port> epmd_port_please(std::string_view host, std::string_view alive) {
  auto s = net::tcp_socket::connect(host, epmd_port(), std::chrono::seconds(5));
  if (!s) return error{errc::no_node, "epmd on " + std::string(host) + ": " + s.error().message()};
  std::string req;
  req += char(port_please2_req);
  req += alive;
  if (auto r = s->send(with_length(req)); !r) return error{errc::epmd, "epmd: " + r.error().message()};
  auto head = read_exact(*s, 2, std::chrono::seconds(5));
  if (!head) return head.error();
  if (uint8_t((*head)[0]) != port2_resp) return error{errc::epmd, "epmd: unexpected answer to PORT_PLEASE2"};
  if ((*head)[1] != 0)
    return error{errc::no_node, "epmd on " + std::string(host) + " knows no node " + std::string(alive)};
  auto body = read_exact(*s, 8, std::chrono::seconds(5));
  if (!body) return body.error();
  return node_port{uint16_t(get16(*body, 0)), uint16_t(get16(*body, 4)), uint16_t(get16(*body, 6))};
}

}  // namespace herd::dist::detail
