// The listener's shared state: slots, acceptor wake-ups, the listening
// socket's readiness callback and its closing.
#include "listener_state.hpp"

#include <herd/actors/send.hpp>
#include <herd/runtime/sched.hpp>

#include <linux/sock_diag.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace herd::net::detail {
namespace {

void on_listen_ready(rt::io_source* src, uint32_t) noexcept {
  auto* l = reinterpret_cast<listener_state*>(src);
  // seq_cst: pairs with the acceptor's load of ready_seq before accept().
  l->ready_seq.fetch_add(1, std::memory_order_seq_cst);
  try {
    l->wake_one(wait_reason::ready);
  } catch (...) {
    // Out of memory for the wake message: an acceptor that is not parked
    // sees ready_seq move; a parked one waits for the next edge.
  }
}

void free_state(void* p) { delete static_cast<listener_state*>(p); }

}  // namespace

std::size_t listener_state::reserve(std::size_t want) noexcept {
  std::size_t cur = conns.load(std::memory_order_seq_cst);
  for (;;) {
    std::size_t max = max_conns.load(std::memory_order_seq_cst);
    if (cur >= max) return 0;
    std::size_t n = std::min(want, max - cur);
    // seq_cst: the count is what slot waiters check after registering.
    if (conns.compare_exchange_weak(cur, cur + n, std::memory_order_seq_cst, std::memory_order_seq_cst)) return n;
  }
}

void listener_state::unreserve(std::size_t n) {
  conns.fetch_sub(n, std::memory_order_seq_cst);
  wake_one(wait_reason::slot);
}

bool listener_state::wake_one(wait_reason r) {
  pid p;
  {
    rt::lock_guard<rt::mutex> g(wait_m);
    auto& v = waiting[static_cast<int>(r)];
    if (v.empty()) return false;
    p = v.back();
    v.pop_back();
  }
  herd::send(p, acceptor_wake{});
  return true;
}

void listener_state::wake_all() {
  std::vector<pid> all;
  {
    rt::lock_guard<rt::mutex> g(wait_m);
    for (auto& v : waiting) {
      all.insert(all.end(), v.begin(), v.end());
      v.clear();
    }
  }
  for (pid p : all) herd::send(p, acceptor_wake{});
}

namespace {

// The packets the listening socket dropped (sk_drops): SYNs and handshakes
// refused because its accept queue was full, and segments for connections
// already gone. The namespace-wide TcpExt ListenOverflows/ListenDrops add up
// every socket's. 0 before Linux 4.12 (no SO_MEMINFO).
uint64_t listen_drops_of(int fd) noexcept {
  uint32_t mem[SK_MEMINFO_VARS] = {};
  socklen_t len = sizeof mem;
  if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mem, &len) != 0 || len <= SK_MEMINFO_DROPS * sizeof(uint32_t))
    return 0;
  return mem[SK_MEMINFO_DROPS];
}

}  // namespace

void listener_state::close_listen() noexcept {
  rt::lock_guard<rt::mutex> g(lfd_m);
  int fd = std::exchange(lfd, -1);
  if (fd < 0) return;
  final_drops = listen_drops_of(fd);
  rt::io_deregister(fd);  // before close(): the number may be reused at once
  ::close(fd);
}

listener_info listener_state::snapshot() const {
  listener_info i;
  i.name = name;
  i.bind = bind;
  i.port = port;
  i.connections = conns.load(std::memory_order_relaxed);
  i.max_connections = max_conns.load(std::memory_order_relaxed);
  i.accepts = accepts.load(std::memory_order_relaxed);
  i.refusals = refusals.load(std::memory_order_relaxed);
  i.emfile_backoffs = emfile_backoffs.load(std::memory_order_relaxed);
  {
    rt::lock_guard<rt::mutex> g(lfd_m);
    i.listen_drops = lfd >= 0 ? listen_drops_of(lfd) : final_drops;
  }
  i.suspended = suspended.load(std::memory_order_relaxed);
  i.draining = draining.load(std::memory_order_relaxed);
  i.acceptors = opts.acceptors;
  uint64_t s = sup.load(std::memory_order_relaxed);
  if (s) i.supervisor = pid{static_cast<uint32_t>(s), static_cast<uint32_t>(s >> 32)};
  uint64_t cs = conns_sup.load(std::memory_order_relaxed);
  if (cs) i.conns_sup = pid{static_cast<uint32_t>(cs), static_cast<uint32_t>(cs >> 32)};
  return i;
}

std::shared_ptr<listener_state> make_listener_state() {
  auto* l = new listener_state;
  l->src.on_ready = &on_listen_ready;
  // The last holder closes the socket; the object itself waits out a grace
  // period (an event for it may be in a poller's hands).
  return std::shared_ptr<listener_state>(l, [](listener_state* s) {
    s->close_listen();
    rt::retire(s, &free_state);
  });
}

}  // namespace herd::net::detail
