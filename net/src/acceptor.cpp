// An acceptor: one of the listener's pool (priority::high), all sharing the
// listening socket.
//
// The loop, and why each step:
//   1. Suspended: wait for resume_listener.
//   2. Reserve up to 64 slots against max_connections (a CAS on the shared
//      count); none free: wait until a connection ends. Reserving first keeps
//      the limit exact — an accepted socket always has a slot.
//   3. Read ready_seq, then accept4(SOCK_NONBLOCK | SOCK_CLOEXEC) until the
//      slots are used or EAGAIN. The listening socket is edge-triggered: a
//      connection that was already waiting makes no new event, so an
//      acceptor never waits for readiness unless accept just said EAGAIN,
//      and then only until ready_seq moves past the value read before it.
//      After a full batch of 64 it wakes another waiting acceptor to help.
//      These accepts run inside rt::fd_reserve's gate: while the observer
//      hands its spare descriptor over, an acceptor waits 1 ms instead.
//   4. Hand the batch to conns_sup in one message (it spawns the processes).
//   5. EMFILE / ENFILE (and ENOBUFS / ENOMEM): report once per episode
//      (it ends when accept drains the backlog),
//      back off 100 ms, retry — connections wait in the backlog meanwhile,
//      and an acceptor never spins on an error it cannot clear.
//      ECONNABORTED, EPROTO, EINTR and the network errors accept(2) lists as
//      "already pending": try the next one.
#include "listener_state.hpp"
#include "conns_sup.hpp"

#include <herd/actors/logger.hpp>
#include <herd/actors/process.hpp>
#include <herd/actors/receive.hpp>
#include <herd/actors/send.hpp>
#include <herd/runtime/clock.hpp>
#include <herd/runtime/fd_reserve.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace herd::net::detail {
namespace {

constexpr std::size_t batch = 64;

template <class Ok>
void wait_until(listener_state& l, wait_reason r, Ok ok) {
  pid me = herd::self();
  {
    rt::lock_guard<rt::mutex> g(l.wait_m);
    l.waiting[static_cast<int>(r)].push_back(me);
  }
  // Checked after registering: a waker that changed the condition before we
  // registered is seen here; one that changes it later finds us in the list.
  if (!ok()) herd::receive([](const acceptor_wake&) {});
  {
    rt::lock_guard<rt::mutex> g(l.wait_m);
    auto& v = l.waiting[static_cast<int>(r)];
    if (auto it = std::find(v.begin(), v.end(), me); it != v.end()) v.erase(it);
  }
}

bool retry_at_once(int e) {
  switch (e) {
    case EINTR:
    case ECONNABORTED:
    case EPROTO:
    case ENETDOWN:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETUNREACH:
    case EPERM:  // firewall rules
      return true;
    default:
      return false;
  }
}

bool out_of_descriptors(int e) { return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM; }

// How a batch of accepts ended.
enum class batch_end { full, drained, held_off, failed };

// Step 3: accepts into got until it holds k (or the listener is suspended:
// full), the backlog is empty (drained) or accept4 fails (failed, with its
// errno in err). Out of descriptors the observer may be handing its spare
// over: then it takes none (held_off; fd_reserve.hpp). No blocking point in
// here, so the gate is never held across a switch.
batch_end accept_some(listener_state& l, std::size_t k, accepted_batch& got, int& err) {
  rt::fd_reserve::taker gate;
  if (!gate) return batch_end::held_off;
  // Suspended (or draining) meanwhile: stop taking connections now; those
  // already taken go to conns_sup, which tells them of a drain.
  while (got.fds.size() < k && !l.suspended.load(std::memory_order_relaxed)) {
    sockaddr_in6 peer{};
    socklen_t plen = sizeof peer;
    int fd = accept4(l.listen_fd_while_accepting(), reinterpret_cast<sockaddr*>(&peer), &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      got.fds.push_back(fd);
      got.peers.push_back(peer);
      continue;
    }
    err = errno;
    if (retry_at_once(err)) continue;
    return err == EAGAIN || err == EWOULDBLOCK ? batch_end::drained : batch_end::failed;
  }
  return batch_end::full;
}

}  // namespace

void acceptor_main(std::shared_ptr<listener_state> lp) {
  listener_state& l = *lp;
  for (;;) {
    if (l.suspended.load(std::memory_order_seq_cst)) {
      wait_until(l, wait_reason::resume, [&] { return !l.suspended.load(std::memory_order_seq_cst); });
      continue;
    }
    std::size_t k = l.reserve(batch);
    if (k == 0) {
      wait_until(l, wait_reason::slot, [&] {
        return l.conns.load(std::memory_order_seq_cst) < l.max_conns.load(std::memory_order_seq_cst) ||
               l.suspended.load(std::memory_order_seq_cst);
      });
      continue;
    }
    // seq_cst: pairs with the poller's fetch_add (see listener_state.hpp).
    uint64_t seq = l.ready_seq.load(std::memory_order_seq_cst);
    accepted_batch got;
    got.accepted_ms = rt::now_ms();
    int fatal = 0;
    const batch_end end = accept_some(l, k, got, fatal);
    std::size_t n = got.fds.size();
    if (n < k) l.unreserve(k - n);
    if (n) {
      l.accepts.fetch_add(n, std::memory_order_relaxed);
      uint64_t cs = l.conns_sup.load(std::memory_order_acquire);
      // The batch's destructor closes the sockets if conns_sup is gone.
      herd::send(pid{static_cast<uint32_t>(cs), static_cast<uint32_t>(cs >> 32)}, std::move(got));
    }
    if (end == batch_end::held_off) {  // a hand-over takes microseconds
      herd::sleep(std::chrono::milliseconds(1));
      continue;
    }
    if (end == batch_end::failed) {
      if (out_of_descriptors(fatal)) {
        l.emfile_backoffs.fetch_add(1, std::memory_order_relaxed);
        if (!l.emfile_reported.exchange(true, std::memory_order_relaxed)) {
          char buf[128];
          herd::log_report("listener " + l.name + ": accept: " + strerror_r(fatal, buf, sizeof buf) +
                           "; backing off 100 ms at a time until descriptors free up");
        }
      } else {
        char buf[128];
        herd::log_report("listener " + l.name + ": accept: " + strerror_r(fatal, buf, sizeof buf) +
                         "; retrying in 100 ms");
      }
      herd::sleep(std::chrono::milliseconds(100));
      continue;
    }
    if (end == batch_end::drained) {
      // The episode ends when the backlog is caught up, not at the first
      // accept a freed descriptor allows: near the limit that would log at
      // every close.
      l.emfile_reported.store(false, std::memory_order_relaxed);
      wait_until(l, wait_reason::ready, [&] {
        return l.ready_seq.load(std::memory_order_seq_cst) != seq || l.suspended.load(std::memory_order_seq_cst);
      });
      continue;
    }
    if (n == batch) {
      l.wake_one(wait_reason::ready);  // more may be waiting: share the work
      herd::yield();                   // and stay stoppable (a blocking point)
    }
  }
}

}  // namespace herd::net::detail
