#include <herd/websocket/handshake.hpp>

#include "sha1.hpp"

namespace herd::ws {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Calls f on each element of a comma-separated list, trimmed; stops when f
// returns true and returns whether it did.
template <class F>
bool any_token(std::string_view list, F f) {
  while (!list.empty()) {
    auto comma = list.find(',');
    auto item = trim(list.substr(0, comma));
    if (!item.empty() && f(item)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

bool has_token(std::string_view list, std::string_view token) {
  return any_token(list, [&](std::string_view t) { return http::iequals(t, token); });
}

handshake refuse(int status, std::string why, std::string_view extra_headers = {}) {
  handshake h;
  h.status = status;
  const char* text = status == 426 ? "Upgrade Required" : status == 405 ? "Method Not Allowed" : "Bad Request";
  h.response = "HTTP/1.1 " + std::to_string(status) + " " + text + "\r\n";
  h.response += extra_headers;
  h.response += "Content-Type: text/plain\r\nContent-Length: " + std::to_string(why.size() + 1) +
                "\r\nConnection: close\r\n\r\n" + why + "\n";
  h.why = std::move(why);
  return h;
}

}  // namespace

std::string accept_key(std::string_view key) {
  std::string s(key);
  s += "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  auto d = detail::sha1(s);
  return detail::base64(d.data(), d.size());
}

bool is_upgrade(const http::request& r) {
  return r.method == "GET" && has_token(r.joined("Upgrade"), "websocket");
}

handshake accept_upgrade(const http::request& r, const handshake_options& o) {
  if (r.method != "GET") return refuse(405, "a WebSocket upgrade must be a GET", "Allow: GET\r\n");
  if (r.version_minor < 1) return refuse(400, "a WebSocket upgrade needs HTTP/1.1");
  if (!has_token(r.joined("Upgrade"), "websocket")) return refuse(400, "no Upgrade: websocket");
  if (!has_token(r.joined("Connection"), "upgrade")) return refuse(400, "no Connection: Upgrade");
  auto version = r.find("Sec-WebSocket-Version");
  if (!version || trim(*version) != "13")
    return refuse(426, "Sec-WebSocket-Version must be 13", "Sec-WebSocket-Version: 13\r\n");
  auto key = r.find("Sec-WebSocket-Key");
  if (!key || detail::base64_decoded_size(trim(*key)) != 16)
    return refuse(400, "Sec-WebSocket-Key must be 16 bytes in base64");
  handshake h;
  h.accepted = true;
  h.status = 101;
  std::string offered = r.joined("Sec-WebSocket-Protocol");
  for (const auto& p : o.protocols)  // subprotocol names are case-sensitive tokens
    if (any_token(offered, [&](std::string_view t) { return t == p; })) {
      h.protocol = p;
      break;
    }
  h.response = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
               accept_key(trim(*key)) + "\r\n";
  if (!h.protocol.empty()) h.response += "Sec-WebSocket-Protocol: " + h.protocol + "\r\n";
  h.response += "\r\n";
  return h;
}

}  // namespace herd::ws
