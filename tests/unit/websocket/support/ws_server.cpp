#include "ws_server.hpp"

namespace ws_test {

std::optional<herd::http::request> read_upgrade_head(herd::net::tcp_socket& s, std::string& rest) {
  std::string head;
  std::size_t end;
  while ((end = head.find("\r\n\r\n")) == std::string::npos) {
    if (head.size() > 8192) return std::nullopt;
    auto b = s.recv(0, std::chrono::seconds(10));
    if (!b) return std::nullopt;
    head.append(b->view());
  }
  rest = head.substr(end + 4);
  head.resize(end + 2);
  herd::http::request r;
  auto eol = head.find("\r\n");
  std::string line = head.substr(0, eol);
  auto sp1 = line.find(' '), sp2 = line.rfind(' ');
  if (sp1 == std::string::npos || sp2 == sp1) return std::nullopt;
  r.method = line.substr(0, sp1);
  r.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  auto q = r.target.find('?');
  r.path = r.target.substr(0, q);
  if (q != std::string::npos) r.query = r.target.substr(q + 1);
  r.version_minor = line.ends_with("HTTP/1.0") ? 0 : 1;
  for (std::size_t at = eol + 2; at < head.size();) {
    auto e = head.find("\r\n", at);
    std::string h = head.substr(at, e - at);
    at = e + 2;
    auto colon = h.find(':');
    if (colon == std::string::npos) return std::nullopt;
    std::string v = h.substr(colon + 1);
    while (!v.empty() && v.front() == ' ') v.erase(0, 1);
    while (!v.empty() && v.back() == ' ') v.pop_back();
    r.headers.push_back({h.substr(0, colon), v});
  }
  return r;
}

void echo_handler::init(herd::ws::session& s, const herd::http::request&) {
  if (observer.valid()) herd::send(observer, echo_opened{herd::self(), s.protocol()});
}

void echo_handler::handle(herd::ws::session& s, const herd::ws::event& e) {
  using k = herd::ws::event::kind;
  if (e.type == k::text) {
    if (e.payload.starts_with("close ")) {
      s.close(uint16_t(std::stoi(std::string(e.payload.substr(6)))), "asked");
      return;
    }
    s.text(e.payload);
  } else if (e.type == k::binary) {
    s.binary(e.payload);
  }
}

void echo_handler::info(herd::ws::session& s, const herd::any_message& m) {
  if (auto* p = m.get<std::string>()) s.text(*p);
}

void echo_handler::closing(herd::ws::session& s) {
  if (observer.valid()) herd::send(observer, echo_closing{herd::self(), s.sent_code()});
}

void echo_handler::terminate(const herd::ws::ending& how) {
  if (observer.valid()) herd::send(observer, echo_ended{herd::self(), how});
}

uint16_t start_echo_server(const std::string& name, const herd::ws::options& o, herd::pid observer) {
  auto shared = std::make_shared<const herd::ws::options>(o);
  auto l = herd::net::start_listener(name, {.bind = "127.0.0.1", .max_connections = herd::net::infinity_connections},
                                     [shared, observer](herd::net::tcp_socket s) {
    std::string rest;
    auto req = read_upgrade_head(s, rest);
    if (!req) return;
    (void)herd::ws::serve(std::move(s), *req, rest, std::make_unique<echo_handler>(observer), shared);
  });
  return l ? l->port : 0;
}

}  // namespace ws_test
