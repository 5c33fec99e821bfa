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
#include "listener_state.hpp"

#include <herd/actors/links.hpp>
#include <herd/actors/logger.hpp>
#include <herd/actors/process.hpp>
#include <herd/actors/receive.hpp>
#include <herd/actors/send.hpp>
#include <herd/actors/spawn.hpp>
#include <herd/runtime/clock.hpp>

#include <unordered_set>

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

void stop_all(listener_state& l, std::unordered_set<pid>& children) {
  for (pid c : children) herd::exit(c, exit_reason::shutdown());
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
  for (pid c : children) herd::exit(c, exit_reason::kill());
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
  std::unordered_set<pid> children;
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
          for (int& fd : b.fds) {
            int mine = std::exchange(fd, -1);
            try {
              pid c = herd::spawn_link(so, &connection_main, lp, mine, b.accepted_ms);
              children.insert(c);
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
          for (pid c : children) herd::send(c, listener_draining{l.name});
        },
        [](const any_message&) {});
    if (stop) {
      stop_all(l, children);
      herd::exit(stop_reason);
    }
  }
}

}  // namespace herd::net::detail
