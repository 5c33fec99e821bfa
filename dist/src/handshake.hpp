// The distribution handshake, version 6 (OTP 23+), over a passive herd socket
// (2-byte length-prefixed packets). Both roles:
//
//   initiator A                         acceptor B
//   'N' flags creation name     ->
//                               <-      's' status ("ok", "nok", "alive", ...)
//                               <-      'N' flags challenge_b creation name
//   'r' challenge_a MD5(cookie ++ challenge_b) ->
//                               <-      'a' MD5(cookie ++ challenge_a)
//
// A v5 initiator ('n' with DFLAG_HANDSHAKE_23) sends its upper flags and
// creation in a 'c' complement after B's challenge. A wrong cookie shows as a
// digest that does not match (B) or as B hanging up after our reply (A):
// both are logged by the caller from the error's detail.
#pragma once
#include <herd/dist/node.hpp>
#include <herd/net/tcp.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace herd::dist::detail {

// Distribution flags (erts' dist.h).
inline constexpr uint64_t dflag_published = 0x1, dflag_extended_references = 0x4, dflag_dist_monitor = 0x8,
                          dflag_fun_tags = 0x10, dflag_dist_monitor_name = 0x20, dflag_new_fun_tags = 0x80,
                          dflag_extended_pids_ports = 0x100, dflag_export_ptr_tag = 0x200,
                          dflag_bit_binaries = 0x400, dflag_new_floats = 0x800, dflag_unicode_io = 0x1000,
                          dflag_small_atom_tags = 0x4000, dflag_utf8_atoms = 0x10000, dflag_map_tag = 0x20000,
                          dflag_big_creation = 0x40000, dflag_send_sender = 0x80000,
                          dflag_big_seqtrace_labels = 0x100000, dflag_exit_payload = 0x400000,
                          dflag_handshake_23 = 0x1000000,
                          dflag_unlink_id = 0x2000000,
                          dflag_v4_nc = uint64_t(1) << 34;
// What OTP 25 requires of a peer.
inline constexpr uint64_t dflag_mandatory = dflag_extended_references | dflag_fun_tags | dflag_extended_pids_ports |
                                            dflag_utf8_atoms | dflag_new_fun_tags | dflag_big_creation |
                                            dflag_new_floats | dflag_map_tag | dflag_export_ptr_tag |
                                            dflag_bit_binaries | dflag_handshake_23;

struct identity {
  std::string name;  // alive@host
  std::string cookie;
  uint32_t creation = 0;
  uint64_t flags = 0;
};

struct peer_info {
  std::string name;
  uint64_t flags = 0;
  uint32_t creation = 0;
};

// From the socket's owner. `expected`: the node we meant to reach.
result<peer_info> handshake_connect(net::tcp_socket& s, const identity& me, const std::string& expected,
                                    std::chrono::milliseconds timeout);

// What an acceptor answers a node that wants to connect: "ok",
// "ok_simultaneous", "nok", "alive" (then `replace` decides on its "true"),
// "not_allowed".
using status_fn = std::function<std::string(const std::string& peer)>;

result<peer_info> handshake_accept(net::tcp_socket& s, const identity& me, const status_fn& status,
                                   std::chrono::milliseconds timeout);

// "MD5(cookie ++ decimal challenge)".
std::string digest(const std::string& cookie, uint32_t challenge);

}  // namespace herd::dist::detail
