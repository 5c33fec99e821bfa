// conns_sup: the parent of every connection process (Ranch's
// ranch_conns_sup). A plain process that traps exits, not a herd
// supervisor: it only ever starts temporary children, and it owns the
// listener's connection count — one message from an acceptor starts a whole
// batch, and each child's exit gives its slot back and wakes an acceptor
// waiting for one. (A simple_one_for_one supervisor would cost a call, a
// child_args allocation and its bookkeeping per connection, and still need
// this count beside it.)
//
// Cases, as they arrive in its mailbox:
//   accepted_batch      spawn one linked connection process per socket; a
//                       spawn that fails closes the socket, gives the slot
//                       back and counts a refusal.
//   exit_msg from a child  forget it, give its slot back; report it if it
//                       crashed (anything but normal / shutdown).
//   exit_msg from anyone else (its supervisor stopping it, the node)
//                       stop: `shutdown` to every child, wait up to
//                       connection_shutdown, `kill` the rest, wait for them,
//                       then exit with the same reason.
//   drain_request       send listener_draining to every child, and to every
//                       child started from now on: a batch an acceptor was
//                       already accepting when the drain began arrives after
//                       the request, and its connections must hear of the
//                       drain too (else they wait out its timeout and die).
//
// A connection process checks the handshake timeout first (a backlog of
// spawns on a busy node can delay it): too late, it closes the socket and
// counts a refusal; otherwise it adopts the socket (registers it, owner =
// itself) and runs the handler.
#include "conns_sup.hpp"
#include "address.hpp"
#include "listener_state.hpp"

#include <herd/actors/call.hpp>
#include <herd/actors/links.hpp>
#include <herd/actors/logger.hpp>
#include <herd/actors/process.hpp>
#include <herd/actors/receive.hpp>
#include <herd/actors/send.hpp>
#include <herd/actors/spawn.hpp>
#include <herd/runtime/clock.hpp>

#include <linux/sockios.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <unordered_map>

namespace herd::net::detail {
namespace {

void connection_main(std::shared_ptr<listener_state> l, int fd, uint64_t accepted_ms) {
  uint64_t waited = rt::now_ms() - accepted_ms;
  if (waited > static_cast<uint64_t>(l->opts.handshake_timeout.count())) {
    ::close(fd);
    l->refusals.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  auto s = tcp_socket::adopt(fd, l->opts.socket);
  if (!s) {
    l->refusals.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  connection_handler h = l->handler;  // a copy: the state may be dropped below
  l.reset();                          // an idle (hibernated) connection keeps no reference
  h(std::move(*s));
}

// What conns_sup remembers of each child: the fd it handed over (the
// connection owns it) and the peer accept4 gave.
struct child_entry {
  int fd;
  sockaddr_in6 peer;
};
using children_map = std::unordered_map<pid, child_entry>;

bool same_peer(const sockaddr_any& now, const sockaddr_in6& then) {
  return now.len > 0 && std::memcmp(&now.ss, &then, std::min<std::size_t>(now.len, sizeof then)) == 0;
}

const char* tcp_state_name(uint8_t s) {
  static const char* const names[] = {"unknown",  "established", "syn_sent", "syn_recv", "fin_wait1", "fin_wait2",
                                      "time_wait", "closed",     "close_wait", "last_ack", "listen",   "closing"};
  return s < std::size(names) ? names[s] : "unknown";
}

// One row. The fd belongs to the connection, which may have closed it (and
// the number been reused) by now: the kernel's answers count only if the fd
// still has the peer accept4 gave — otherwise the row says "closed".
connection_row describe(pid c, const child_entry& e) {
  connection_row r;
  r.pid = c;
  sockaddr_any then;
  std::memcpy(&then.ss, &e.peer, sizeof e.peer);
  then.len = e.peer.sin6_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  r.peer = format_address(then);
  sockaddr_any now;
  now.len = sizeof now.ss;
  tcp_info ti{};
  socklen_t tl = sizeof ti;
  int out = 0, in = 0;
  if (::getpeername(e.fd, reinterpret_cast<sockaddr*>(&now.ss), &now.len) != 0 || !same_peer(now, e.peer) ||
      ::getsockopt(e.fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) != 0 || ::ioctl(e.fd, SIOCOUTQ, &out) != 0 ||
      ::ioctl(e.fd, SIOCINQ, &in) != 0) {
    r.tcp_state = "closed";
    return r;
  }
  r.tcp_state = tcp_state_name(ti.tcpi_state);
  r.send_queue = static_cast<uint32_t>(out);
  r.recv_queue = static_cast<uint32_t>(in);
  return r;
}

void stop_all(listener_state& l, children_map& children) {
  for (auto& [c, e] : children) herd::exit(c, exit_reason::shutdown());
  auto wait_for_exits = [&](std::chrono::milliseconds limit) {
    uint64_t deadline = rt::deadline_after(limit);
    while (!children.empty()) {
      uint64_t now = rt::now_ms();
      if (now >= deadline) return;
      herd::receive(
          [&](const exit_msg& e) {
            if (children.erase(e.from)) l.conns.fetch_sub(1, std::memory_order_seq_cst);
          },
          herd::after(std::chrono::milliseconds(deadline - now)));
    }
  };
  wait_for_exits(l.opts.connection_shutdown);
  for (auto& [c, e] : children) herd::exit(c, exit_reason::kill());
  wait_for_exits(std::chrono::milliseconds(10000));
}

}  // namespace

void conns_sup_main(std::shared_ptr<listener_state> lp) {
  listener_state& l = *lp;
  herd::trap_exit(true);
  // Started before the acceptors (rest_for_one): nobody holds a slot yet.
  l.conns.store(0, std::memory_order_seq_cst);
  // release: acceptors read it (acquire) before sending batches here.
  l.conns_sup.store(herd::self().value(), std::memory_order_release);
  children_map children;
  spawn_options so;
  so.stack_size = l.opts.connection_stack_size;
  so.kind = process_kind::connection;
  so.initial_call = "herd::net connection";
  bool draining = false;
  for (;;) {
    bool stop = false;
    exit_reason stop_reason;
    herd::receive(
        [&](accepted_batch& b) {
          for (std::size_t i = 0; i < b.fds.size(); ++i) {
            int mine = std::exchange(b.fds[i], -1);
            try {
              pid c = herd::spawn_link(so, &connection_main, lp, mine, b.accepted_ms);
              children.emplace(c, child_entry{mine, i < b.peers.size() ? b.peers[i] : sockaddr_in6{}});
              if (draining) herd::send(c, listener_draining{l.name});
            } catch (const std::exception& e) {
              ::close(mine);
              l.refusals.fetch_add(1, std::memory_order_relaxed);
              l.unreserve(1);
              herd::log_report("listener " + l.name + ": cannot start a connection process: " + e.what());
            }
          }
        },
        [&](exit_msg& e) {
          if (children.erase(e.from)) {
            l.unreserve(1);
            const exit_reason& r = e.reason;
            if (!r.is_normal() && r.kind() != exit_kind::shutdown && r.kind() != exit_kind::killed)
              herd::log_report("listener " + l.name + ": connection " + e.from.to_string() +
                               " exited: " + r.to_string());
            return;
          }
          stop = true;
          stop_reason = std::move(e.reason);
        },
        [&](const drain_request&) {
          draining = true;
          for (auto& [c, e] : children) herd::send(c, listener_draining{l.name});
        },
        [&](call_request<list_request>&& c) {
          connections_listing out;
          out.total = children.size();
          out.rows.reserve(std::min(c.req.max, children.size()));
          for (auto& [p, e] : children) {
            if (out.rows.size() >= c.req.max) break;
            out.rows.push_back(describe(p, e));
          }
          herd::reply(c.from, std::move(out));
        },
        [](const any_message&) {});
    if (stop) {
      stop_all(l, children);
      herd::exit(stop_reason);
    }
  }
}

}  // namespace herd::net::detail

namespace herd::net {

result<connections_listing> connections_of(herd::pid conns_sup, std::size_t max, std::chrono::milliseconds timeout) {
  herd::detail::require_process("herd::net::connections_of");
  if (!conns_sup.valid()) return error{errc::not_found, 0, "connections_of: no conns_sup (an empty pid)"};
  try {
    return herd::call<connections_listing>(conns_sup, detail::list_request{max}, timeout);
  } catch (const herd::call_error& e) {  // a call's failure is an exception; here it is an answer
    return error{e.kind() == herd::call_error::timeout ? errc::timeout : errc::not_found, 0, e.what()};
  }
}

}  // namespace herd::net
