// The listener API: binding, the registry of running listeners by name, and
// the stop / drain / suspend / limit operations. The tree itself is in
// listener_sup.cpp; the accept loop in acceptor.cpp; connections in
// conns_sup.cpp.
//
// Lifetimes: the registry holds a shared_ptr to each listener's state while
// its tree runs; every process of the tree holds one too. The listening
// socket belongs to the tree: it is closed, and the registry entry removed,
// when the last process that can accept on it has ended (the accept-side
// reference, listener_sup.hpp) — by stop_listener, or on its own when the
// tree is killed or gives up, or when the node stops its processes. So a
// listener never outlives its node, and a dead one leaves no open port.
#include "address.hpp"
#include "conns_sup.hpp"
#include "listener_state.hpp"
#include "listener_sup.hpp"

#include <herd/actors/logger.hpp>
#include <herd/actors/process.hpp>
#include <herd/actors/registry.hpp>
#include <herd/actors/send.hpp>
#include <herd/supervisors/supervisor.hpp>

#include <herd/runtime/clock.hpp>
#include <herd/runtime/sched.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <map>
#include <mutex>

namespace herd::net {
namespace {

using detail::listener_state;

std::mutex g_m;
std::map<std::string, std::shared_ptr<listener_state>, std::less<>> g_listeners;

std::shared_ptr<listener_state> find(std::string_view name) {
  std::lock_guard<std::mutex> g(g_m);
  auto it = g_listeners.find(name);
  return it == g_listeners.end() ? nullptr : it->second;
}

int somaxconn() {
  std::ifstream f("/proc/sys/net/core/somaxconn");
  int v = 0;
  if (f >> v && v > 0) return v;
  return SOMAXCONN;
}

// The tree's last accepting process has ended: close the socket (no
// acceptor can call accept() on a reused descriptor number any more) and
// forget the listener. Runs in that process, while the node is up.
void tree_ended(const std::shared_ptr<listener_state>& l) noexcept {
  l->close_listen();
  std::shared_ptr<listener_state> gone;  // released outside the lock
  std::lock_guard<std::mutex> g(g_m);
  auto it = g_listeners.find(l->name);
  if (it != g_listeners.end() && it->second == l) {
    gone = std::move(it->second);
    g_listeners.erase(it);
  }
}

error not_found(std::string_view name) { return {errc::not_found, 0, "no listener \"" + std::string(name) + "\""}; }

// Binds and listens; the fd is non-blocking and close-on-exec.
result<int> open_listening(const listener_options& o, uint16_t* port) {
  auto addr = detail::make_address(o.bind, o.port, false);
  if (!addr) return addr.error();
  std::string where = o.bind + ":" + std::to_string(o.port);
  int fd = ::socket(addr->family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return error{errc::system, errno, "socket"};
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (o.reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
    int e = errno;
    ::close(fd);
    return error{errc::system, e, "setsockopt SO_REUSEPORT"};
  }
  if (::bind(fd, addr->get(), addr->len) != 0) {
    int e = errno;
    ::close(fd);
    if (e == EADDRINUSE) return error{errc::in_use, e, "bind " + where};
    if (e == EADDRNOTAVAIL) return error{errc::bad_address, e, "bind " + where};
    return error{errc::system, e, "bind " + where};
  }
  if (::listen(fd, o.backlog > 0 ? o.backlog : somaxconn()) != 0) {
    int e = errno;
    ::close(fd);
    if (e == EADDRINUSE) return error{errc::in_use, e, "listen " + where};
    return error{errc::system, e, "listen " + where};
  }
  detail::sockaddr_any local;
  local.len = sizeof local.ss;
  getsockname(fd, reinterpret_cast<sockaddr*>(&local.ss), &local.len);
  const auto* sa = reinterpret_cast<const sockaddr_in*>(&local.ss);  // the port is at the same offset for v6
  *port = ntohs(sa->sin_port);
  return fd;
}

}  // namespace

result<listener_info> start_listener(std::string name, listener_options o, connection_handler h) {
  herd::detail::require_process("herd::net::start_listener");
  if (name.empty()) return error{errc::bad_options, 0, "a listener needs a name"};
  if (o.acceptors == 0) return error{errc::bad_options, 0, "acceptors must be at least 1"};
  if (!h) return error{errc::bad_options, 0, "no connection handler"};
  if (o.handshake_timeout.count() <= 0) return error{errc::bad_options, 0, "handshake_timeout must be positive"};
  if (find(name) || herd::whereis(name)) return error{errc::in_use, 0, "the name \"" + name + "\" is taken"};

  uint16_t port = 0;
  auto fd = open_listening(o, &port);
  if (!fd) return fd.error();

  auto l = detail::make_listener_state();
  l->name = name;
  l->bind = o.bind;
  l->port = port;
  l->opts = o;
  l->handler = std::move(h);
  l->lfd = *fd;
  l->max_conns.store(o.max_connections, std::memory_order_relaxed);
  if (int rc = rt::io_register(l->lfd, &l->src, EPOLLIN); rc < 0) {
    ::close(std::exchange(l->lfd, -1));
    return error{errc::system, -rc, "epoll_ctl ADD (listening socket)"};
  }
  {
    std::lock_guard<std::mutex> g(g_m);
    if (!g_listeners.emplace(name, l).second) return error{errc::in_use, 0, "the name \"" + name + "\" is taken"};
  }
  std::shared_ptr<void> accept_side(l.get(), [l](void*) { tree_ended(l); });
  auto sup = detail::start_listener_sup(l, std::move(accept_side));
  if (!sup) {
    // The supervisor may not have freed its specs yet: the name is free now.
    std::lock_guard<std::mutex> g(g_m);
    if (auto it = g_listeners.find(name); it != g_listeners.end() && it->second == l) g_listeners.erase(it);
    return sup.error();
  }
  l->sup.store(sup->value(), std::memory_order_relaxed);
  return l->snapshot();
}

result<> stop_listener(std::string_view name) {
  herd::detail::require_process("herd::net::stop_listener");
  auto l = find(name);
  if (!l) return not_found(name);
  uint64_t v = l->sup.load(std::memory_order_relaxed);
  pid sup{static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32)};
  (void)herd::supervisor::stop(sup, exit_reason::shutdown());  // no timeout: only ends once it has
  l->close_listen();
  // The tree is gone, so nothing reads the handler any more; destroy it now,
  // in the caller, not when the state is freed (retired: possibly only at
  // the node's stop). A handler made by module code has its destructor in
  // the module, which may be unloaded by then.
  connection_handler dead;
  {
    std::lock_guard<std::mutex> g(g_m);
    dead = std::move(l->handler);
    l->handler = nullptr;
    auto it = g_listeners.find(name);
    if (it != g_listeners.end() && it->second == l) g_listeners.erase(it);
  }
  return {};
}

namespace detail {
std::shared_ptr<listener_state> find_listener_state(std::string_view name) { return find(name); }
}  // namespace detail

result<> drain_listener(std::string_view name, std::chrono::milliseconds timeout) {
  herd::detail::require_process("herd::net::drain_listener");  // it waits with herd::sleep
  auto l = find(name);
  if (!l) return not_found(name);
  l->draining.store(true, std::memory_order_relaxed);
  l->suspended.store(true, std::memory_order_seq_cst);
  uint64_t cs = l->conns_sup.load(std::memory_order_acquire);
  herd::send(pid{static_cast<uint32_t>(cs), static_cast<uint32_t>(cs >> 32)}, detail::drain_request{});
  uint64_t deadline = timeout == herd::infinity ? rt::no_deadline : rt::deadline_after(timeout);
  while (l->conns.load(std::memory_order_seq_cst) > 0 && rt::now_ms() < deadline)
    herd::sleep(std::chrono::milliseconds(5));
  // Handlers that ignore listener_draining are stopped now: say how many.
  if (std::size_t left = l->conns.load(std::memory_order_seq_cst))
    herd::log_report("listener " + std::string(name) + ": drain timed out after " +
                     std::to_string(timeout.count()) + " ms; stopping " + std::to_string(left) +
                     " connection(s) that did not end");
  return stop_listener(name);
}

result<> suspend_listener(std::string_view name) {
  auto l = find(name);
  if (!l) return not_found(name);
  l->suspended.store(true, std::memory_order_seq_cst);
  l->wake_all();  // those waiting for slots or connections go to wait for resume
  return {};
}

result<> resume_listener(std::string_view name) {
  auto l = find(name);
  if (!l) return not_found(name);
  l->suspended.store(false, std::memory_order_seq_cst);
  l->wake_all();  // connections that queued meanwhile made no new edge
  return {};
}

result<> set_max_connections(std::string_view name, std::size_t n) {
  auto l = find(name);
  if (!l) return not_found(name);
  l->max_conns.store(n, std::memory_order_seq_cst);
  l->wake_all();
  return {};
}

result<listener_info> info(std::string_view name) {
  auto l = find(name);
  if (!l) return not_found(name);
  return l->snapshot();
}

std::vector<listener_info> listeners() {
  std::vector<listener_info> out;
  std::lock_guard<std::mutex> g(g_m);
  for (auto& [n, l] : g_listeners) out.push_back(l->snapshot());
  return out;
}

}  // namespace herd::net
