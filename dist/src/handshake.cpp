#include "handshake.hpp"

#include <random>

#include "bytes.hpp"
#include "md5.hpp"

namespace herd::dist::detail {

namespace {

using namespace std::chrono;

struct packets {
  net::tcp_socket& s;
  steady_clock::time_point deadline;

  milliseconds left() const {
    auto l = duration_cast<milliseconds>(deadline - steady_clock::now());
    return l.count() > 0 ? l : milliseconds(1);
  }
  result<> write(const std::string& body) {
    std::string p;
    put16(p, uint32_t(body.size()));
    p += body;
    if (auto r = s.send(p, left()); !r) return error{errc::handshake, "write: " + r.error().message()};
    return {};
  }
  result<std::string> read_exact(std::size_t n) {
    std::string out;
    while (out.size() < n) {
      auto b = s.recv(n - out.size(), left());
      if (!b) {
        errc c = b.error().code == net::errc::timeout ? errc::timeout : errc::handshake;
        return error{c, b.error().code == net::errc::closed ? "closed" : b.error().message()};
      }
      out.append(b->view());
    }
    return out;
  }
  result<std::string> read() {
    auto h = read_exact(2);
    if (!h) return h.error();
    uint32_t n = get16(*h, 0);
    if (n == 0) return error{errc::handshake, "empty handshake packet"};
    return read_exact(n);
  }
};

uint32_t new_challenge() {
  static thread_local std::mt19937 gen{std::random_device{}()};
  return uint32_t(gen());
}

// 'N' flags(8) challenge(4) creation(4) nlen(2) name — the challenge packet,
// or without the challenge, the name packet.
std::string n_packet(const identity& me, const uint32_t* challenge) {
  std::string p = "N";
  put64(p, me.flags);
  if (challenge) put32(p, *challenge);
  put32(p, me.creation);
  put16(p, uint32_t(me.name.size()));
  return p + me.name;
}

}  // namespace

std::string digest(const std::string& cookie, uint32_t challenge) {
  auto d = md5(cookie + std::to_string(challenge));
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

result<peer_info> handshake_connect(net::tcp_socket& s, const identity& me, const std::string& expected,
                                    milliseconds timeout) {
  packets io{s, steady_clock::now() + timeout};
  if (auto r = io.write(n_packet(me, nullptr)); !r) return r.error();
  auto st = io.read();
  if (!st) return st.error();
  if (st->empty() || (*st)[0] != 's') return error{errc::handshake, "expected a status from " + expected};
  std::string status = st->substr(1);
  if (status == "alive") {
    // It still has a connection to a node of our name: we are a new
    // incarnation, so it should drop the old one.
    if (auto r = io.write("strue"); !r) return r.error();
  } else if (status != "ok" && status != "ok_simultaneous") {
    return error{status == "not_allowed" ? errc::not_allowed : errc::handshake,
                 expected + " answered \"" + status + "\" to our connection attempt"};
  }
  auto ch = io.read();
  if (!ch) return ch.error();
  const std::string& c = *ch;
  if (c.size() < 1 + 8 + 4 + 4 + 2 || c[0] != 'N') return error{errc::handshake, "bad challenge from " + expected};
  peer_info peer;
  peer.flags = get64(c, 1);
  uint32_t her_challenge = get32(c, 9);
  peer.creation = get32(c, 13);
  uint32_t nlen = get16(c, 17);
  if (c.size() < 19 + nlen) return error{errc::handshake, "bad challenge from " + expected};
  peer.name = c.substr(19, nlen);
  if ((peer.flags & dflag_mandatory) != dflag_mandatory)
    return error{errc::handshake, peer.name + " lacks capabilities OTP 25 requires"};
  uint32_t mine = new_challenge();
  std::string reply = "r";
  put32(reply, mine);
  reply += digest(me.cookie, her_challenge);
  if (auto r = io.write(reply); !r) return r.error();
  auto ack = io.read();
  if (!ack) {
    if (ack.error().code == errc::timeout) return ack.error();
    return error{errc::not_allowed, peer.name + " hung up after our challenge reply: its cookie differs from ours"};
  }
  if (ack->size() != 17 || (*ack)[0] != 'a') return error{errc::handshake, "bad challenge ack from " + peer.name};
  if (ack->substr(1) != digest(me.cookie, mine))
    return error{errc::not_allowed, peer.name + " answered our challenge with a wrong digest: its cookie differs"};
  return peer;
}

result<peer_info> handshake_accept(net::tcp_socket& s, const identity& me, const status_fn& status,
                                   milliseconds timeout) {
  packets io{s, steady_clock::now() + timeout};
  auto np = io.read();
  if (!np) return np.error();
  const std::string& n = *np;
  peer_info peer;
  bool v5 = false;
  if (!n.empty() && n[0] == 'N' && n.size() >= 1 + 8 + 4 + 2) {
    peer.flags = get64(n, 1);
    peer.creation = get32(n, 9);
    uint32_t nlen = get16(n, 13);
    if (n.size() < 15 + nlen) return error{errc::handshake, "bad name packet"};
    peer.name = n.substr(15, nlen);
  } else if (!n.empty() && n[0] == 'n' && n.size() >= 1 + 2 + 4) {
    v5 = true;
    peer.flags = get32(n, 3);
    peer.name = n.substr(7);
    if (!(peer.flags & dflag_handshake_23))
      return error{errc::handshake, peer.name + " speaks only the pre-OTP 23 handshake"};
  } else {
    return error{errc::handshake, "not a distribution handshake"};
  }
  if (peer.name.find('@') == std::string::npos) return error{errc::handshake, "bad node name " + peer.name};
  std::string st = status(peer.name);
  if (auto r = io.write("s" + st); !r) return r.error();
  if (st == "alive") {
    auto answer = io.read();
    if (!answer || *answer != "strue") return error{errc::handshake, peer.name + " kept its old connection"};
  } else if (st != "ok" && st != "ok_simultaneous") {
    return error{errc::not_allowed, "refused " + peer.name + " (" + st + ")"};
  }
  uint32_t mine = new_challenge();
  if (auto r = io.write(n_packet(me, &mine)); !r) return r.error();
  if (v5) {
    auto comp = io.read();
    if (!comp || comp->size() != 9 || (*comp)[0] != 'c') return error{errc::handshake, "bad complement"};
    peer.flags |= uint64_t(get32(*comp, 1)) << 32;
    peer.creation = get32(*comp, 5);
  }
  if ((peer.flags & dflag_mandatory) != dflag_mandatory)
    return error{errc::handshake, peer.name + " lacks capabilities OTP 25 requires"};
  auto rp = io.read();
  if (!rp) return rp.error();
  if (rp->size() != 21 || (*rp)[0] != 'r') return error{errc::handshake, "bad challenge reply from " + peer.name};
  uint32_t her_challenge = get32(*rp, 1);
  if (rp->substr(5) != digest(me.cookie, mine))
    return error{errc::not_allowed, "connection attempt from " + peer.name +
                                        " refused: wrong cookie (its challenge reply does not match ours)"};
  if (auto r = io.write("a" + digest(me.cookie, her_challenge)); !r) return r.error();
  return peer;
}

}  // namespace herd::dist::detail
