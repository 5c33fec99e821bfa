// A distribution peer that is the test process itself: the real handshake
// on a TCP connection to a herd node's listener, then hand-made frames, so a
// test can send what no BEAM node would and read every frame the node writes.
// Used from a herd process, which then owns the socket.
#pragma once
#include <herd/dist/node.hpp>
#include <herd/dist/term_codec.hpp>
#include <herd/net/tcp.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "bytes.hpp"
#include "epmd.hpp"
#include "handshake.hpp"
#include "peers.hpp"
#include "wire.hpp"

namespace herd_test_dist {

namespace dd = herd::dist::detail;
using herd::term;
using namespace std::chrono_literals;

struct fake_node {
  dd::identity id;
  std::optional<herd::net::tcp_socket> sock;
  std::string err;
  std::string in;  // bytes read, not yet a whole frame

  // `extra_flags`: distribution flags announced beyond the fixed set.
  fake_node(const std::string& node, const std::string& base, const std::string& cookie, uint64_t extra_flags = 0) {
    std::string host = herd::test::short_host();
    id = dd::identity{herd::test::unique_sname(base) + "@" + host, cookie, 7,
                      dd::dflag_mandatory | dd::dflag_send_sender | dd::dflag_v4_nc | dd::dflag_dist_monitor |
                          extra_flags};
    auto np = dd::epmd_port_please(host, node.substr(0, node.find('@')));
    if (!np) {
      err = np.error().message();
      return;
    }
    auto s = herd::net::tcp_socket::connect(host, np->port, 10s);
    if (!s) {
      err = s.error().message();
      return;
    }
    auto peer = dd::handshake_connect(*s, id, node, 10s);
    if (!peer) {
      err = peer.error().message();
      return;
    }
    sock.emplace(std::move(*s));
  }
  dd::self_id self() const { return dd::self_id{id.name, id.creation}; }
  // REG_SEND from this node's process <id.0> to `name`.
  bool reg_send(uint32_t from_id, const std::string& name, const term& msg) {
    return reg_send_raw(from_id, name, herd::term_to_binary(msg));
  }
  bool reg_send_raw(uint32_t from_id, const std::string& name, const std::string& payload) {
    std::string f = dd::frame_reg_send(self(), herd::pid{from_id, 0}, name, payload);
    auto w = sock->send(f, 10s);
    if (!w) err = w.error().message();
    return bool(w);
  }
  bool send_raw(const std::string& frame) {
    auto w = sock->send(frame, 10s);
    if (!w) err = w.error().message();
    return bool(w);
  }
  // The control term of the next frame the node writes (ticks skipped), or
  // nullopt when none comes within `limit` or the connection ends; the
  // frame's payload term, when it has one, in *payload.
  std::optional<term> next_control(std::chrono::seconds limit, std::optional<term>* payload = nullptr) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      while (in.size() >= 4) {
        std::size_t at = 0;
        uint32_t len = dd::get32(in, at);
        if (in.size() - 4 < len) break;
        std::string body = in.substr(4, len);
        in.erase(0, 4 + std::size_t(len));
        if (len == 0) continue;  // a tick
        // 'p', then the control term in the external format (131 ...),
        // then for some the payload (131 ...).
        if (body.size() < 2 || body[0] != 'p' || uint8_t(body[1]) != 131) continue;
        at = 2;
        auto t = herd::decode_term(body, at);
        if (!t) {
          err = "a frame whose control term does not decode";
          return std::nullopt;
        }
        if (payload) {
          payload->reset();
          if (at < body.size() && uint8_t(body[at]) == 131) {
            ++at;
            if (auto p = herd::decode_term(body, at)) *payload = std::move(*p);
          }
        }
        return std::move(*t);
      }
      auto r = sock->recv(0, 1s);
      if (!r) {
        if (r.error().code == herd::net::errc::timeout) continue;
        err = "read: " + r.error().message();
        return std::nullopt;
      }
      in.append(r->view());
    }
    err = "no frame within the limit";
    return std::nullopt;
  }
  // True once the node closed the connection (ticks are read and dropped).
  bool closed_within(std::chrono::seconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      auto r = sock->recv(0, 1s);
      if (!r && r.error().code != herd::net::errc::timeout) return true;
    }
    return false;
  }
};


}  // namespace herd_test_dist
