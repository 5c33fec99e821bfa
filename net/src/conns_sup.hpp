// conns_sup's messages (see conns_sup.cpp).
#pragma once
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace herd::net::detail {

// From an acceptor: sockets it accepted (slots already reserved for them).
// Owns the fds: whatever is still in it when it is destroyed is closed (the
// message may be dropped if conns_sup is gone).
// peers[i]: fds[i]'s address from accept4 (an IPv4 one fits; what
// connections_of reports).
struct accepted_batch {
  std::vector<int> fds;
  std::vector<sockaddr_in6> peers;  // room for either family (28 bytes)
  uint64_t accepted_ms = 0;
  accepted_batch() = default;
  accepted_batch(accepted_batch&& o) noexcept
      : fds(std::move(o.fds)), peers(std::move(o.peers)), accepted_ms(o.accepted_ms) {
    o.fds.clear();
  }
  accepted_batch& operator=(accepted_batch&&) = delete;
  ~accepted_batch() {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  }
};

// From drain_listener: pass listener_draining to every connection.
struct drain_request {};

// From connections_of (a call): list up to `max` connections.
struct list_request {
  std::size_t max = 0;
};

}  // namespace herd::net::detail
