// Taking requests from the clients (the design is at the top of
// observer_server.cpp, "Pacing" and "Idle clients"): reading up to a whole line,
// choosing whose request is answered next, the idle timeout, and `load`
// answered by a helper process.
#include "observer_server.hpp"

#include <herd/actors/spawn.hpp>

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <exception>

namespace herd::observer {

void server::read_client(client& c, bool drain) {
  char buf[read_chunk];
  std::size_t budget = read_budget;
  // Only up to a complete line: the rest waits in the socket until that one
  // is answered (client.hpp), so a flood is paced, never buffered here. A
  // peer that hung up is drained (what it sent is still answered; its
  // socket's buffer bounds it), then not polled again.
  while (!c.dead && !c.eof && (drain || (budget > 0 && !c.has_line()))) {
    ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0) {
      c.eof = true;  // what it sent is still answered
      break;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      c.dead = true;  // broken: its traces go too
      break;
    }
    if (n < 0) break;
    budget -= std::min(budget, std::size_t(n));
    c.take_in(std::string_view(buf, std::size_t(n)));
  }
}

bool server::answer_one(client& c) {
  std::string_view line;
  for (;;) {
    client::next_kind k = c.next(line);
    if (k == client::next_kind::none) return false;
    c.active_ms = steady_ms();
    if (k == client::next_kind::too_long) {
      c.queue(error_line(nullptr, "too_long",
                         "a request line may be at most 65536 bytes; the rest of this one is discarded"));
      return true;
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") != std::string_view::npos) break;  // blank lines are ignored
  }
  current_ = &c;
  std::string reply = dispatch(line, env_);  // "": a load, answered later (start_load)
  current_ = nullptr;
  if (reply.size() > big_reply) trim_due_ = true;
  answered_since_trim_ = true;
  last_answer_ms_ = steady_ms();
  c.queue(reply);
  return true;
}

client* server::next_ready(uint64_t now_ns) {
  client* best = nullptr;
  for (auto& c : clients_) {
    if (c.dead || c.awaiting || !c.has_line()) continue;
    c.requests.refill(now_ns);
    if (!c.requests.ready()) continue;
    if (!best || c.vtime < best->vtime) best = &c;
  }
  return best;
}

void server::answer_requests() {
  const uint64_t round_start = steady_ns();
  for (int i = 0; i < answers_per_round; ++i) {
    const uint64_t now = steady_ns();
    // Back to poll: a request that came meanwhile (an operator's) is only
    // seen there, and then goes first (fair share).
    if (now - round_start > round_ns) return;
    cpu_.refill(now);
    if (!cpu_.ready()) return;
    client* c = next_ready(now);
    if (!c) return;
    // Start-time fair queueing: one that was not asking starts at the clock.
    c->vtime = std::max(c->vtime, vclock_);
    vclock_ = c->vtime;
    const uint64_t t0 = thread_cpu_ns();
    if (answer_one(*c)) c->requests.tokens -= 1;
    c->flush();
    // Its idle time starts now, not when the request was read: a reply
    // that took longer than idle_timeout to build (processes over 100,000
    // actors on a busy machine) would otherwise find its client "idle" at
    // the very next poll, before it could read a byte, and close it.
    c->active_ms = steady_ms();
    const uint64_t cost = std::max(thread_cpu_ns() - t0, min_charge_ns);
    c->vtime += cost;
    cpu_.tokens -= double(cost);
  }
}

int server::pacing_timeout_ms(uint64_t now_ns) const {
  uint64_t wait_ns = UINT64_MAX;
  for (auto& c : clients_) {
    if (c.dead || c.awaiting || !c.has_line()) continue;
    token_bucket b = c.requests;
    b.refill(now_ns);
    wait_ns = std::min(wait_ns, b.ns_until_ready());
  }
  if (wait_ns == UINT64_MAX) return -1;  // nothing waits for a token
  token_bucket cpu = cpu_;
  cpu.refill(now_ns);
  wait_ns = std::max(wait_ns, cpu.ns_until_ready());
  // Paced clients are woken in batches: a wake-up per token would take the
  // core from a worker hundreds of times a second for a few microseconds
  // each (latency for the node's own I/O), for the same rate.
  return int(std::clamp<uint64_t>((wait_ns + 999'999) / 1'000'000, pacing_tick_ms, 60000));
}

// A client is idle while it has nothing in flight (no request waiting in
// its buffer or for a load, no trace) and reads no reply bytes: one that
// stops reading a reply holds its slot no longer than a silent one.
bool server::may_idle(const client& c) const {
  if (c.dead || c.awaiting || c.has_line()) return false;
  for (auto& t : traces_)
    if (t.client_key == c.key) return false;
  return true;
}

uint64_t server::idle_ms(const client& c, uint64_t now_ms) const {
  return may_idle(c) && now_ms > c.active_ms ? now_ms - c.active_ms : 0;
}

void server::expire_idle(const std::vector<uint64_t>& polled_quiet, uint64_t now_ms) {
  const uint64_t limit = uint64_t(limits_.idle_timeout.count());
  auto idle_for = [&](const client& c) { return idle_ms(c, now_ms); };
  auto close_idle = [&](client& c, uint64_t ms) {
    c.queue(error_line(nullptr, "idle_timeout",
                       "no request for " + std::to_string(ms) + " ms: the connection is closed"));
    c.flush();
    c.dead = true;
  };
  // Only clients the last poll found quiet: one whose request came in while
  // a slow request held the loop is not idle.
  for (uint64_t key : polled_quiet)
    if (client* c = find(key); c && idle_for(*c) >= limit) close_idle(*c, idle_for(*c));
  if (clients_.size() < max_clients) return;
  // All slots held: is anyone waiting for one? (accept takes it next)
  pollfd p{unix_fd_, POLLIN, 0};
  if (::poll(&p, 1, 0) != 1 || !(p.revents & POLLIN)) return;
  client* longest = nullptr;
  uint64_t most = 0;
  for (auto& c : clients_)
    if (uint64_t ms = idle_for(c); ms > most) most = ms, longest = &c;
  if (longest && most >= std::min(limit, contended_idle_ms)) close_idle(*longest, most);
}

void server::start_load(std::string_view line) {
  client& c = *current_;
  auto job = std::make_shared<load_job>();
  job->wake = wake_;
  c.awaiting = true;
  try {
    // A process: modules::load runs its file work and the factory's probe on
    // the blocking pool and its purge wait in the process, not here.
    herd::spawn([job, l = std::string(line)] {
      dispatch_env none;  // no start_load: answered in this process
      std::string reply = dispatch(l, none);
      {
        rt::lock_guard<rt::mutex> g(job->m);
        job->reply = std::move(reply);
        job->done = true;
      }
      job->wake->wake();
    });
  } catch (const std::exception& e) {
    c.awaiting = false;
    c.queue(error_line(parse_request(line).id, "failed", std::string("load: ") + e.what()));
    return;
  }
  loads_.push_back(pending_load{c.key, std::move(job)});
}

void server::collect_loads() {
  for (auto it = loads_.begin(); it != loads_.end();) {
    std::string reply;
    {
      rt::lock_guard<rt::mutex> g(it->job->m);
      if (!it->job->done) {
        ++it;
        continue;
      }
      reply = std::move(it->job->reply);
    }
    if (client* c = find(it->client_key)) {
      c->awaiting = false;
      c->queue(reply);
      c->flush();
    }
    it = loads_.erase(it);
  }
}

}  // namespace herd::observer
