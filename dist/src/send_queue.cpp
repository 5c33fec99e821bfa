// The way out to another node for a local sender: the node's connection
// process (started on first use from a process), and its queue, which a
// sending process waits on at dist_buf_busy_limit (docs/distribution.md,
// "The writer queue").
#include "send_queue.hpp"

#include <herd/actors/process.hpp>
#include <herd/actors/send.hpp>
#include <herd/runtime/sched.hpp>

#include <exception>
#include <vector>

#include "remote_pids.hpp"

namespace herd::dist::detail {

std::optional<route> route_to(std::string_view node) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    {
      rt::lock_guard g(state().mu);
      if (!state().running) return std::nullopt;
      auto it = state().conns.find(node);
      if (it != state().conns.end()) {
        route r;
        r.conn = it->second.proc;
        r.q = it->second.counters;
        r.sender = it->second.up && (it->second.peer_flags & dflag_send_sender);
        r.me = state().self;
        r.limit = state().busy_limit;
        return r;
      }
    }
    if (attempt == 0 && !connection_for(node)) return std::nullopt;
  }
  return std::nullopt;
}

// Erlang's busy distribution port: a process sending to a connection with
// `limit` bytes or more queued waits (parked, its worker free) until the
// connection has written enough, or ends. Only a process waits, never the
// connection itself, a foreign thread or code running while an exception
// unwinds. An exit signal that arrives meanwhile ends the wait (the send
// still goes) and takes effect at the process's next blocking point, as
// herd never throws exit_unwind at a send. True when the connection ended
// meanwhile (the caller finds the node's connection again).
bool wait_for_room(conn_counters& q, std::size_t limit, herd::pid conn) noexcept {
  if (limit == 0 || q.queued_bytes.load(std::memory_order_acquire) < limit) return false;
  rt::fiber* me = rt::current();
  if (!me || !herd::in_process() || herd::self() == conn || std::uncaught_exceptions() > 0) return false;
  for (;;) {
    try {
      if (herd::detail::blocking_point()) return false;
    } catch (...) {  // exit_unwind: thrown again at the next blocking point
      return false;
    }
    {
      rt::lock_guard g(q.mu);
      if (q.closed) return true;
      q.waiters.push_back(me);
      // seq_cst with the connection's decrement-then-look: either it sees
      // this waiter or this sees its decrement.
      q.has_waiters.store(true, std::memory_order_seq_cst);
      if (q.queued_bytes.load(std::memory_order_seq_cst) < limit) {
        q.waiters.pop_back();
        q.has_waiters.store(!q.waiters.empty(), std::memory_order_relaxed);
        return false;
      }
    }
    rt::park(me);
    {
      rt::lock_guard g(q.mu);
      std::erase(q.waiters, me);
      q.has_waiters.store(!q.waiters.empty(), std::memory_order_relaxed);
      if (q.closed) return true;
    }
    if (q.queued_bytes.load(std::memory_order_acquire) < limit) return false;
  }
}

// Every out_frame goes in counted (the connection takes the bytes off as
// the kernel takes them).
void enqueue(const route& r, std::string frame) {
  if (r.q) r.q->queued_bytes.fetch_add(frame.size(), std::memory_order_acq_rel);
  herd::send(r.conn, out_frame{std::move(frame)});
}

// Waits for room on the node's connection; one that ended meanwhile (a
// simultaneous connect lost, the peer gone) is looked up again once.
std::optional<route> route_with_room(std::string_view node) {
  auto way = route_to(node);
  if (way && way->q && wait_for_room(*way->q, way->limit, way->conn)) way = route_to(node);
  return way;
}

bool send_remote(herd::pid to, std::string bytes) {
  auto r = lookup_remote(to);
  if (!r) return false;
  herd::pid from = herd::in_process() ? herd::self() : herd::no_pid;
  auto way = route_with_room(r->node);
  if (!way) return false;
  enqueue(*way, frame_send(way->me, from, to, bytes, way->sender));
  return true;
}

}  // namespace herd::dist::detail
