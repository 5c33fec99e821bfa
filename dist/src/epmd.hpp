// epmd's protocol over herd sockets: ALIVE2 (publish this node for as long as
// the socket stays open) and PORT_PLEASE2 (where another node listens).
// epmd listens on 127.0.0.1:4369, or ERL_EPMD_PORT, as for erl.
#pragma once
#include <herd/dist/node.hpp>
#include <herd/net/tcp.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace herd::dist::detail {

uint16_t epmd_port();

struct published {
  net::tcp_socket sock;  // closing it unpublishes
  uint32_t creation = 0;
};

// From a process (blocking points). Starts `epmd -daemon` when none answers.
result<published> epmd_publish(std::string_view alive, uint16_t port, bool hidden);

struct node_port {
  uint16_t port = 0;
  uint16_t highest = 0;  // distribution protocol versions it speaks
  uint16_t lowest = 0;
};

// From a process. errc::no_node when epmd on `host` does not know `alive`.
result<node_port> epmd_port_please(std::string_view host, std::string_view alive);

}  // namespace herd::dist::detail
