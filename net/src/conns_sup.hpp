// conns_sup's messages (see conns_sup.cpp).
#pragma once
#include <unistd.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace herd::net::detail {

// From an acceptor: sockets it accepted (slots already reserved for them).
// Owns the fds: whatever is still in it when it is destroyed is closed (the
// message may be dropped if conns_sup is gone).
struct accepted_batch {
  std::vector<int> fds;
  uint64_t accepted_ms = 0;
  accepted_batch() = default;
  accepted_batch(accepted_batch&& o) noexcept : fds(std::move(o.fds)), accepted_ms(o.accepted_ms) { o.fds.clear(); }
  accepted_batch& operator=(accepted_batch&&) = delete;
  ~accepted_batch() {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  }
};

// From drain_listener: pass listener_draining to every connection.
struct drain_request {};

}  // namespace herd::net::detail
