// herd::observer's node side: a poll loop on a thread of its own.
//
// Design
//  * Why a thread, not an actor: every request scans or waits — a table scan
//    of 1,000,000 processes, a 100 ms wait for a busy process's relations, a
//    module load's file work, a client that stops reading. On the observer's
//    own thread none of that ever occupies a worker, and it never touches
//    scheduler state: it reads the process table under rt::foreign_read_guard
//    (introspect.cpp) and talks to actors only by sending signals and
//    messages, or by spawning short helper processes (tree.cpp). The cost to
//    the node is the scan itself, on whichever core the OS gives this thread.
//  * One thread serves everything in order: the Unix socket's accepts, up to
//    16 clients (a 17th waits in the socket's backlog until a slot frees),
//    the metrics endpoint, trace streams, and the one-second sampler.
//    Requests are answered one at a time, so a slow request delays other
//    clients' answers (never the node) — except `load`, whose factory may
//    take any time: a helper process runs it (the module layer's file work
//    goes to the blocking pool) and its client's later requests wait.
//  * Pacing: a client that floods must not cost the node more than a
//    bounded share, nor keep the others waiting. Requests are taken one at a
//    time from the clients' buffers (client.hpp), never all at once:
//     - each client has a token bucket of requests (options::requests_per_s,
//       request_burst); past it, its requests stay in its socket (not read,
//       not lost) until it has a token again;
//     - all requests together may use max_cpu_share of one core: each is
//       charged the thread's CPU time it took (CLOCK_THREAD_CPUTIME_ID, at
//       least 20 us) against one bucket; while it is in debt nothing is
//       answered (accepts, traces and the sampler go on);
//     - of the clients with a request and a token, the one that used the
//       least CPU so far answers next (start-time fair queueing: a client
//       that starts asking joins at the clock of the last request answered,
//       so an operator's request passes a queue of flooders' requests).
//  * Idle clients: a client that sends no request and reads no reply bytes
//    for options::idle_timeout (and has no trace or load running) gets
//    `idle_timeout` and is closed; with all 16 slots held and another client
//    waiting, the longest-idle one goes after min(idle_timeout, 1 s). A
//    metrics connection not answered within idle_timeout is closed; with its
//    16 slots held, newcomers wait in its backlog.
//  * Flow control: replies are queued per client and written without
//    blocking; a client with more than 4 MiB waiting is closed (client.hpp).
//    Input is framed by lines of at most 64 KiB; a longer one gets
//    `too_long` and is discarded up to its newline (client.cpp).
//  * Out of descriptors (EMFILE/ENFILE): when the node is out of fds is
//    when an operator most needs to look at it. The thread holds one spare
//    descriptor (/dev/null) and gives it up to accept a client; it takes it
//    back from the next client it lets go (kept shut: between a close and
//    an open, a listener's acceptor could take the slot), or by opening
//    /dev/null again once a descriptor is free. The give-up itself, a close
//    and an accept, runs in rt::fd_reserve's hand-over: without it a
//    listener's acceptor retrying accept4 took the slot in between (the
//    observer's thread preempted there), and the observer stayed without a
//    descriptor until a connection closed. With the spare gone, accepting
//    pauses for 100 ms at a time (the client waits in the backlog) instead
//    of spinning on a socket poll keeps reporting readable.
//  * Peers: SO_PEERCRED at accept — the node's uid or root, else one
//    `refused` line and close (unix_socket.cpp). The socket is mode 0600 in
//    a directory only the node's user can enter.
//  * Traces: introspect::tracer records deliveries from the senders' threads
//    and writes an eventfd (wake_fd_, shared with stop) when events arrive or
//    a trace ends; the loop then moves events into the client's queue. A
//    trace ends at its limit, at the rate limit, when its process exits, at
//    its timeout (checked here), or when its client goes (`closed`).
//  * Shutdown: the destructor sets stop_ and writes the eventfd; the loop
//    ends its traces (detaching them while the node still runs — the
//    handle must be destroyed before the node stops), closes every client
//    and unlinks the socket file.
// Memory ordering: stop_ is a relaxed flag read after the eventfd's read
// (the syscall pair orders it); everything else is this thread's alone.
#include "observer_server.hpp"

#include "metrics_http.hpp"
#include "pacing.hpp"
#include "unix_socket.hpp"
#include "views.hpp"

#include <herd/actors/spawn.hpp>
#include <herd/runtime/alloc.hpp>
#include <herd/runtime/clock.hpp>
#include <herd/runtime/fd_reserve.hpp>

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fcntl.h>

#include <cerrno>
#include <chrono>
#include <ctime>
#include <stdexcept>
#include <utility>

namespace herd::observer {
namespace {

constexpr std::size_t max_http_clients = 16;
constexpr std::size_t max_http_head = 8192;
constexpr uint64_t out_of_fds_pause_ms = 100;

bool out_of_descriptors(int e) { return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM; }

int open_spare() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

void say(int fd, const std::string& line) {
  // Best effort: a fresh socket's buffer takes one short line.
  [[maybe_unused]] ssize_t n = ::send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

json event_json(const introspect::trace_event& e) {
  json j;
  j["at_ms"] = e.at_ms;
  j["kind"] = e.signal ? "signal" : "message";
  j["type"] = e.type;
  j["bytes"] = e.bytes;
  if (e.from.valid()) j["from"] = e.from.to_string();
  if (!e.reason.empty()) j["reason"] = e.reason;
  return j;
}

}  // namespace

server::server(int unix_fd, std::string path, int metrics_fd, uint16_t metrics_port, const options& o)
    : unix_fd_(unix_fd), metrics_fd_(metrics_fd), wake_(std::make_shared<waker>()), wake_fd_(wake_->fd),
      spare_fd_(open_spare()), path_(std::move(path)), metrics_port_(metrics_port), limits_(o) {
  if (wake_fd_ < 0) throw std::runtime_error("observer: eventfd failed");
  // A second's worth of CPU budget, and never less than one big scan.
  cpu_.reset(limits_.max_cpu_share * 1e9, std::max(limits_.max_cpu_share, 0.05) * 1e9, steady_ns());
  env_.samples = &samples_;
  env_.rate_baseline = &rate_baseline_;
  env_.start_trace = [this](const trace_request& r) -> std::optional<request_failure> {
    std::string err;
    auto t = introspect::tracer::start(r.target, r.limit, wake_fd_, &err);
    if (!t) return request_failure{err.find("no such") != std::string::npos ? "noproc" : "failed", err};
    traces_.push_back(trace_stream{current_->key, r.id, std::move(t), steady_ms() + r.timeout_ms});
    return std::nullopt;
  };
  // `load` may wait for a module's factory: a helper process answers it.
  env_.defer_load = [this](std::string_view line) { start_load(line); };
}

void server::start() { thread_ = std::thread([this] { run(); }); }

server::~server() {
  stop_.store(true, std::memory_order_relaxed);
  wake_->wake();
  if (thread_.joinable()) thread_.join();
  traces_.clear();  // detaches (the node must still run: see the header)
  for (auto& c : clients_) ::close(c.fd);
  for (auto& h : http_) ::close(h.fd);
  ::close(unix_fd_);
  if (metrics_fd_ >= 0) ::close(metrics_fd_);
  if (spare_fd_ >= 0) ::close(spare_fd_);
  ::unlink(path_.c_str());
}

client* server::find(uint64_t key) {
  for (auto& c : clients_)
    if (c.key == key) return &c;
  return nullptr;
}

void server::accept_clients() {
  for (bool first = true;; first = false) {
    int fd = ::accept4(unix_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0 && out_of_descriptors(errno) && spare_fd_ >= 0) {
      // The spare's slot goes to this client. The node's acceptors take no
      // descriptor between the close and the accept (rt::fd_reserve); if no
      // client waits after all, the spare is opened again at once, before
      // they are let back in.
      fd = rt::fd_reserve::hand_over([&] {
        ::close(std::exchange(spare_fd_, -1));
        int got = ::accept4(unix_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        int e = errno;
        if (got < 0) spare_fd_ = open_spare();
        errno = e;
        return got;
      });
    }
    if (fd < 0) {
      if (!out_of_descriptors(errno)) return;  // EAGAIN, or an error the next poll shows again
      // accept4 takes a descriptor before it looks at the queue: EMFILE
      // does not say a client waits. Only on the first try (poll said one
      // does) is there someone to wait for; pausing after a client was
      // taken would keep the next one waiting 100 ms for nothing.
      if (first) accept_paused_until_ = steady_ms() + out_of_fds_pause_ms;
      return;
    }
    long uid = peer_uid(fd);
    if (!peer_allowed(uid)) {
      say(fd, error_line(nullptr, "refused",
                                   "uid " + std::to_string(uid) + " may not observe this node (only its own user "
                                   "and root may)"));
      release(fd);
      continue;
    }
    client c;
    c.key = next_key_++;
    c.fd = fd;
    c.active_ms = steady_ms();
    c.requests.reset(limits_.requests_per_s, limits_.request_burst, steady_ns());
    c.vtime = vclock_;
    clients_.push_back(std::move(c));
    // Full: the next one waits in the backlog for a slot.
    if (clients_.size() >= max_clients) return;
  }
}

void server::accept_http() {
  for (bool first = true;; first = false) {
    int fd = ::accept4(metrics_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      // The spare is the observer clients' alone: scrapes wait for free fds.
      if (out_of_descriptors(errno) && first) accept_paused_until_ = steady_ms() + out_of_fds_pause_ms;
      return;
    }
    http_.push_back(http_client{fd, {}, {}, 0, false, false, steady_ms()});
    if (http_.size() >= max_http_clients) return;  // the next waits in the backlog
  }
}

void server::serve_http(http_client& h) {
  if (!h.answered) {
    char buf[4096];
    for (;;) {
      ssize_t n = ::recv(h.fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        h.dead = true;
        return;
      }
      if (n < 0) break;
      h.in.append(buf, std::size_t(n));
      if (h.in.size() > max_http_head) break;
    }
    auto end = h.in.find("\r\n\r\n");
    if (end == std::string::npos && h.in.size() <= max_http_head) return;  // wait for the rest of the head
    const uint64_t t0 = thread_cpu_ns();
    h.out = http_response(h.in, prometheus_text(samples_));
    cpu_.tokens -= double(std::max(thread_cpu_ns() - t0, min_charge_ns));  // scrapes share the budget
    h.answered = true;
  }
  while (h.out_off < h.out.size()) {
    ssize_t n = ::send(h.fd, h.out.data() + h.out_off, h.out.size() - h.out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      h.out_off += std::size_t(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    break;
  }
  h.dead = true;  // all sent (or the peer is gone): Connection: close
}

void server::pump_traces() {
  const uint64_t now = steady_ms();
  for (auto it = traces_.begin(); it != traces_.end();) {
    client* c = find(it->client_key);
    if (!c || c->dead) {  // its client is gone: `closed`, nobody to tell
      it = traces_.erase(it);
      continue;
    }
    if (it->t->ended() == introspect::trace_end::none && now >= it->deadline_ms)
      it->t->stop(introspect::trace_end::timeout);
    // ended() is read before take(): events recorded before the end are all
    // taken below, and none is recorded after it.
    introspect::trace_end end = it->t->ended();
    for (auto& e : it->t->take()) {
      c->queue(event_line(it->id, event_json(e)));
      ++it->sent;
    }
    if (end != introspect::trace_end::none) {
      json done = {{"events", it->sent}, {"why", introspect::to_string(end)}};
      if (end == introspect::trace_end::exited) done["reason"] = it->t->exit_reason();
      c->queue(done_line(it->id, std::move(done)));
      it = traces_.erase(it);
    } else {
      ++it;
    }
    if (c->flush() > 0) c->active_ms = steady_ms();  // (its idle time starts when a trace ends)
  }
}

int server::next_trace_deadline_ms() const {
  if (traces_.empty()) return -1;
  uint64_t now = steady_ms(), next = UINT64_MAX;
  for (auto& t : traces_) next = std::min(next, t.deadline_ms);
  return next <= now ? 0 : int(std::min<uint64_t>(next - now, 60000));
}

void server::release(int fd) {
  if (spare_fd_ >= 0) {
    ::close(fd);
    return;
  }
  // The spare is in use and the node may be out of fds: an acceptor could
  // take the slot between a close and a reopen. Keep this one instead, shut.
  ::shutdown(fd, SHUT_RDWR);
  spare_fd_ = fd;
  accept_paused_until_ = 0;  // a waiting client can have it now
}

void server::drop_dead() {
  for (auto it = clients_.begin(); it != clients_.end();) {
    if (it->dead) {
      release(it->fd);
      it = clients_.erase(it);
    } else {
      ++it;
    }
  }
  std::erase_if(http_, [this](const http_client& h) {
    if (h.dead) release(h.fd);
    return h.dead;
  });
}

void server::run() {
  pthread_setname_np(pthread_self(), "herd-observer");  // for top -H, gdb, perf
  std::vector<pollfd> fds;
  std::vector<uint64_t> keys;  // the client behind fds[i] (0: not a client)
  std::vector<uint64_t> quiet;
  const uint64_t idle_limit = uint64_t(limits_.idle_timeout.count());
  while (!stop_.load(std::memory_order_relaxed)) {
    int timeout = samples_.tick();
    if (int t = next_trace_deadline_ms(); t >= 0) timeout = std::min(timeout, t);
    if (spare_fd_ < 0) spare_fd_ = open_spare();  // fails again while the node is out of fds
    const uint64_t now = steady_ms();
    const bool accepting = now >= accept_paused_until_;
    if (!accepting) timeout = std::min(timeout, int(accept_paused_until_ - now));
    // Requests to answer now, or when a token or the CPU budget is back.
    cpu_.refill(steady_ns());
    if (cpu_.ready() && next_ready(steady_ns())) timeout = 0;
    else if (int t = pacing_timeout_ms(steady_ns()); t >= 0) timeout = std::min(timeout, t);
    // The next idle timeout (a client or a metrics connection).
    // (Only clients that may be idle: one running a trace would spin the loop.)
    for (auto& c : clients_)
      if (may_idle(c)) timeout = std::min<int64_t>(timeout, std::max<int64_t>(0, int64_t(c.active_ms + idle_limit) - int64_t(now)));
    for (auto& h : http_) timeout = std::min<int64_t>(timeout, std::max<int64_t>(0, int64_t(h.accepted_ms + idle_limit) - int64_t(now)));
    fds.clear();
    keys.clear();
    auto add = [&](int fd, short ev, uint64_t key) {
      fds.push_back(pollfd{fd, ev, 0});
      keys.push_back(key);
    };
    add(wake_fd_, POLLIN, 0);
    add(accepting && clients_.size() < max_clients ? unix_fd_ : -1, POLLIN, 0);  // poll skips a negative fd
    if (metrics_fd_ >= 0) add(accepting && http_.size() < max_http_clients ? metrics_fd_ : -1, POLLIN, 0);
    const std::size_t first_client = fds.size();
    for (auto& c : clients_) {
      // Read while no whole request waits in its buffer: the others wait in
      // its socket (pacing); a peer that shut its side has nothing more.
      const bool read = !c.eof && !c.has_line();
      const bool polled = !c.eof || c.wants_write();  // a hung-up peer would report POLLHUP at once, every time
      add(polled ? c.fd : -1, short((read ? POLLIN : 0) | (c.wants_write() ? POLLOUT : 0)), c.key);
    }
    const std::size_t first_http = fds.size();
    for (auto& h : http_) add(h.fd, short(h.answered ? POLLOUT : POLLIN), 0);
    int n = ::poll(fds.data(), fds.size(), timeout);
    if (n < 0 && errno != EINTR) break;
    if (fds[0].revents & POLLIN) {
      uint64_t v;
      [[maybe_unused]] ssize_t r = ::read(wake_fd_, &v, sizeof v);
    }
    if (stop_.load(std::memory_order_relaxed)) break;
    collect_loads();
    quiet.clear();
    for (std::size_t i = first_client; i < first_http; ++i) {
      client* c = find(keys[i]);
      if (!c) continue;
      if (!fds[i].revents) {
        quiet.push_back(keys[i]);
        continue;
      }
      if (fds[i].revents & POLLERR) c->dead = true;
      if (fds[i].revents & POLLHUP) read_client(*c, true);
      else if (fds[i].revents & POLLIN) read_client(*c, false);
      if (fds[i].revents & POLLOUT && c->flush() > 0) c->active_ms = steady_ms();
    }
    answer_requests();
    for (auto& c : clients_)
      if (c.eof && !c.awaiting && !c.has_line() && !c.wants_write()) c.dead = true;  // all it sent is answered
    expire_idle(quiet, steady_ms());
    // The http list may grow in accept_http below: index what was polled.
    for (std::size_t i = first_http; i < fds.size(); ++i) {
      http_client& h = http_[i - first_http];
      if (fds[i].revents) serve_http(h);
      else if (steady_ms() >= h.accepted_ms + idle_limit) h.dead = true;  // a head never finished, or never read
    }
    drop_dead();  // first: a client that just left hands its slot to the next
    if (fds[1].revents & POLLIN) accept_clients();
    if (metrics_fd_ >= 0 && (fds[2].revents & POLLIN)) accept_http();
    drop_dead();  // before the traces: a dead client's traces end as `closed`
    pump_traces();
    drop_dead();
    // Replies' temporaries (JSON nodes, rows) go to this thread's glibc
    // arena, which keeps freed pages: 5 MB after a few 5,000-row replies,
    // 2-3 MB fragmented by a minute of small ones among big ones. Hand them
    // back once every client has its reply: at once after a big reply, and
    // after a second without requests otherwise (the loop wakes every
    // second for the sampler; a trim costs well under a millisecond).
    const bool idle_a_second = answered_since_trim_ && steady_ms() >= last_answer_ms_ + 1000;
    if ((trim_due_ || idle_a_second) &&
        std::none_of(clients_.begin(), clients_.end(), [](const client& c) { return c.wants_write(); })) {
      alloc::trim_malloc_arenas();
      trim_due_ = answered_since_trim_ = false;
    }
    // Nobody has asked for a rate for a while (top has quit): give the
    // baseline's memory back (a 1,000,000-process node's is 16 MB).
    if (!rate_baseline_.by_slot.empty() && rt::now_ms() - rate_baseline_.at_ms > 10000)
      rate_baseline_ = introspect::reductions_sample{};
  }
}

}  // namespace herd::observer
