#include "worker.hpp"

#include "cli.hpp"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace connbench {

namespace {
constexpr size_t kScratch = 64 * 1024;
constexpr int kMaxEvents = 512;
constexpr size_t kLine = 96;  // longest chat line we expect: "MSG bench <seq> <ns>"
constexpr char kJoin[] = "JOIN bench\n";

// The payload of message `seq` on connection `id`, bytes [off, off+n). The
// first 8 bytes carry (id, seq) so an echo delivered to the wrong connection
// or a stale message is caught; the rest still depends on both, so a shifted
// or duplicated chunk mismatches too. Regenerated on demand instead of stored:
// no per-connection payload buffer, and partial writes resume from `off`.
void fill(uint32_t id, uint64_t seq, size_t off, size_t n, char* out) {
  const uint64_t tag = (static_cast<uint64_t>(id) << 32) | (seq & 0xffffffffu);
  const uint8_t base = static_cast<uint8_t>(id * 7u + static_cast<uint32_t>(seq) * 13u);
  for (size_t i = 0; i < n; ++i) {
    size_t pos = off + i;
    out[i] = pos < 8 ? static_cast<char>(tag >> (8 * pos))
                     : static_cast<char>(static_cast<uint8_t>(base + pos));
  }
}
}  // namespace

enum class St : uint8_t { idle_slot, connecting, await_first, active, done, closed };

struct Conn {
  int fd = -1;
  uint32_t id = 0;
  St state = St::idle_slot;
  bool sender = false;
  bool bad = false;  // the current echo mismatched somewhere
  bool lt_out = false;  // lt client: EPOLLOUT is in the interest set
  uint16_t line_len = 0;
  uint8_t out_len = 0, out_off = 0;
  uint32_t send_off = 0, recv_off = 0;
  uint64_t seq = 0;
  uint64_t t0 = 0;         // echo: when the current message was first written
  uint64_t opened_ns = 0;  // when connect() was issued, for the connect timeout
  uint64_t got = 0;        // chat: distinct in-order messages seen
  uint64_t last_seq = 0;
  char line[kLine];
  char out[16];
};

Worker::Worker(const Config& cfg, Control& ctl, uint32_t first_id, int count,
               bool owns_sender)
    : cfg_(cfg), ctl_(ctl), conns_(static_cast<size_t>(count) + (owns_sender ? 1 : 0)) {
  for (int i = 0; i < count; ++i) conns_[static_cast<size_t>(i)].id = first_id + static_cast<uint32_t>(i);
  if (owns_sender) {
    sender_ = &conns_.back();
    sender_->sender = true;
    sender_->id = 0xffffffffu;
  }
  rate_ = cfg.rate / cfg.threads;
  wbuf_.reset(new char[kScratch]);
  rbuf_.reset(new char[kScratch]);
  ebuf_.reset(new char[kScratch]);
  sbuf_.reset(new char[kScratch]);
  ep_ = epoll_create1(EPOLL_CLOEXEC);
  if (ep_ < 0) {
    std::perror("connbench: epoll_create1");
    std::exit(1);
  }
}

Worker::~Worker() {
  if (ep_ >= 0) close(ep_);
}

void Worker::run() {
  epoll_event evs[kMaxEvents];
  uint64_t last_expiry = 0;
  while (ctl_.phase.load(std::memory_order_relaxed) != kStop) {
    uint64_t now = now_ns();
    const bool ramping = resolved_ < conns_.size();
    if (opened_ < conns_.size()) open_due_connections(now);
    if (ramping && now - last_expiry > 100'000'000) {
      expire_slow_connects(now);
      last_expiry = now;
    }
    if (sender_) sender_tick(now);
    // Short waits only while something is time-driven (the connect ramp,
    // the sender's schedule); otherwise just often enough to see kStop.
    int timeout = ramping || (sender_ && ctl_.phase.load(std::memory_order_relaxed) == kChatSend) ? 1 : 20;
    int n = epoll_wait(ep_, evs, kMaxEvents, timeout);
    if (n < 0 && errno != EINTR) {
      std::perror("connbench: epoll_wait");
      std::exit(1);
    }
    for (int i = 0; i < n; ++i) on_event(conns_[evs[i].data.u64], evs[i].events);
  }
  if (cfg_.mode == Mode::chat) {
    uint64_t sent = ctl_.msgs_sent.load();
    for (auto& c : conns_)
      if (!c.sender) missing += sent > c.got ? sent - c.got : 0;
  }
  for (auto& c : conns_)
    if (c.fd >= 0) close(c.fd);
}

void Worker::open_due_connections(uint64_t now) {
  // Token schedule from the common start time: a thread that fell behind
  // catches up, in bursts capped so that replies keep being served.
  double elapsed = static_cast<double>(now - ctl_.t_start_ns) / 1e9;
  size_t due = std::min(conns_.size(), static_cast<size_t>(elapsed * rate_) + 1);
  for (int burst = 0; opened_ < due && burst < 256; ++burst) open_one(conns_[opened_++], now);
}

void Worker::open_one(Conn& c, uint64_t now) {
  c.opened_ns = now;
  c.state = St::connecting;
  c.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c.fd < 0) return resolve(c, false);
  int one = 1;
  setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // Several source addresses lift the ~28k-64k ports-per-destination cap.
  if (!bind_source(c.fd, cfg_.sources, c.id)) return resolve(c, false);
  epoll_event ev{};
  // Edge-triggered IN|OUT registered once: one message is outstanding at a
  // time, so no epoll_ctl is needed per message. The lt client waits for the
  // connect with level-triggered OUT and switches to IN once established.
  ev.events = cfg_.client == Client::lt ? EPOLLOUT : EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  c.lt_out = cfg_.client == Client::lt;
  ev.data.u64 = static_cast<uint64_t>(&c - conns_.data());
  if (epoll_ctl(ep_, EPOLL_CTL_ADD, c.fd, &ev) < 0) return resolve(c, false);
  int rc = connect(c.fd, reinterpret_cast<const sockaddr*>(&cfg_.dst), sizeof cfg_.dst);
  if (rc < 0 && errno != EINPROGRESS) return resolve(c, false);
  if (rc == 0) on_established(c);
}

void Worker::expire_slow_connects(uint64_t now) {
  auto limit = static_cast<uint64_t>(cfg_.connect_timeout * 1e9);
  for (size_t i = 0; i < opened_; ++i) {
    Conn& c = conns_[i];
    if ((c.state == St::connecting || c.state == St::await_first) && now - c.opened_ns > limit)
      resolve(c, false);
  }
}

// A connection counts as ready when the server has really served it (first
// echo back, JOIN acknowledged): connect() alone can complete while the
// server's accept queue is overflowing.
void Worker::resolve(Conn& c, bool ok) {
  ++resolved_;
  bump(ok ? ready : failed);
  last_resolved_ns.store(now_ns(), std::memory_order_relaxed);
  if (ok) {
    c.state = (cfg_.mode == Mode::idle) ? St::done : St::active;
  } else {
    if (c.fd >= 0) close(c.fd);
    c.fd = -1;
    c.state = St::closed;
  }
}

void Worker::drop(Conn& c) {
  if (c.state == St::connecting || c.state == St::await_first) return resolve(c, false);
  bump(disconnects);
  close(c.fd);
  c.fd = -1;
  c.state = St::closed;
}

void Worker::on_event(Conn& c, uint32_t ev) {
  if (c.state == St::closed) return;
  if (c.state == St::connecting) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0 || (ev & (EPOLLERR | EPOLLHUP))) return resolve(c, false);
    if (!(ev & EPOLLOUT)) return;
    if (cfg_.client == Client::lt) {
      lt_want_out(c, false);
      if (c.state == St::closed) return;
      return on_established(c);  // the reply's EPOLLIN comes later
    }
    on_established(c);
    if (c.state == St::closed) return;
  }
  if (cfg_.client == Client::lt) {
    if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) lt_readable(c);
    if (c.state != St::closed && (ev & EPOLLOUT)) {
      lt_want_out(c, false);
      if (c.state != St::closed) on_writable(c);
    }
    return;
  }
  if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) on_readable(c);
  if (c.state != St::closed && (ev & EPOLLOUT)) on_writable(c);
}

void Worker::on_established(Conn& c) {
  c.state = St::await_first;
  if (c.sender) return resolve(c, true);
  if (cfg_.mode == Mode::chat) {
    std::memcpy(c.out, kJoin, sizeof kJoin - 1);
    c.out_len = sizeof kJoin - 1;
    c.out_off = 0;
    return out_flush(c);
  }
  echo_start(c);
}

void Worker::on_readable(Conn& c) {
  for (;;) {
    ssize_t r = recv(c.fd, rbuf_.get(), kScratch, 0);
    if (r > 0) {
      if (cfg_.mode == Mode::chat)
        chat_bytes(c, rbuf_.get(), static_cast<size_t>(r));
      else
        echo_bytes(c, rbuf_.get(), static_cast<size_t>(r));
      if (c.state == St::closed) return;
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    return drop(c);  // orderly close by the server, or a reset
  }
}

// lt client: one recv per readiness, of exactly the bytes still outstanding
// (anything beyond is read only when nothing is outstanding, and then counts
// as a mismatch). Level-triggered, so bytes left in the socket report again.
void Worker::lt_readable(Conn& c) {
  const size_t want = c.recv_off < c.send_off ? c.send_off - c.recv_off : kScratch;
  ssize_t r;
  do {
    r = recv(c.fd, rbuf_.get(), std::min(want, kScratch), 0);
  } while (r < 0 && errno == EINTR);
  if (r > 0) return echo_bytes(c, rbuf_.get(), static_cast<size_t>(r));
  if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
  drop(c);
}

void Worker::lt_want_out(Conn& c, bool on) {
  if (c.lt_out == on) return;
  epoll_event ev{};
  ev.events = on ? EPOLLIN | EPOLLOUT : EPOLLIN;
  ev.data.u64 = static_cast<uint64_t>(&c - conns_.data());
  if (epoll_ctl(ep_, EPOLL_CTL_MOD, c.fd, &ev) < 0) return drop(c);
  c.lt_out = on;
}

void Worker::on_writable(Conn& c) {
  if (c.sender) return sender_flush();
  if (cfg_.mode == Mode::chat) return out_flush(c);
  if (c.send_off < static_cast<uint32_t>(cfg_.payload) && c.state != St::done) echo_flush(c);
}

// ---- echo ----

void Worker::echo_start(Conn& c) {
  ++c.seq;
  c.send_off = c.recv_off = 0;
  c.bad = false;
  c.t0 = now_ns();
  echo_flush(c);
}

void Worker::echo_flush(Conn& c) {
  const auto payload = static_cast<uint32_t>(cfg_.payload);
  while (c.send_off < payload) {
    size_t n = std::min<size_t>(payload - c.send_off, kScratch);
    fill(c.id, c.seq, c.send_off, n, wbuf_.get());
    ssize_t w = send(c.fd, wbuf_.get(), n, MSG_NOSIGNAL);
    if (w > 0) {
      c.send_off += static_cast<uint32_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {  // EPOLLOUT resumes
      if (cfg_.client == Client::lt) lt_want_out(c, true);
      return;
    }
    return drop(c);
  }
}

void Worker::echo_bytes(Conn& c, const char* p, size_t n) {
  while (n > 0) {
    if (c.recv_off >= c.send_off) {  // bytes we never sent (or after the one echo in idle mode)
      bump(mismatches);
      return;
    }
    size_t take = std::min<size_t>(n, c.send_off - c.recv_off);
    fill(c.id, c.seq, c.recv_off, take, ebuf_.get());
    if (std::memcmp(p, ebuf_.get(), take) != 0) c.bad = true;
    c.recv_off += static_cast<uint32_t>(take);
    p += take;
    n -= take;
    if (c.recv_off == static_cast<uint32_t>(cfg_.payload)) echo_done(c);
  }
}

void Worker::echo_done(Conn& c) {
  uint64_t now = now_ns();
  hist.record(now - c.t0);
  bump(round_trips);
  if (c.bad) bump(mismatches);
  if (c.state == St::await_first) resolve(c, true);
  if (c.state == St::done || ctl_.phase.load(std::memory_order_relaxed) == kStop) return;
  echo_start(c);
}

// ---- chat ----

void Worker::out_flush(Conn& c) {
  while (c.out_off < c.out_len) {
    ssize_t w = send(c.fd, c.out + c.out_off, c.out_len - c.out_off, MSG_NOSIGNAL);
    if (w > 0) {
      c.out_off = static_cast<uint8_t>(c.out_off + w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    return drop(c);
  }
}

void Worker::chat_bytes(Conn& c, const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] == '\n') {
      chat_line(c, c.line, c.line_len);
      c.line_len = 0;
      if (c.state == St::closed) return;
    } else if (c.line_len < kLine) {
      c.line[c.line_len++] = p[i];
    } else if (c.line_len == kLine) {  // overlong: count once, skip to the newline
      bump(errors);
      c.line_len = kLine + 1;
    }
  }
}

void Worker::chat_line(Conn& c, const char* p, size_t n) {
  auto starts = [&](const char* s) {
    size_t k = std::strlen(s);
    return n >= k && std::memcmp(p, s, k) == 0;
  };
  if (n > kLine) return;  // already counted
  if (!c.sender && c.state == St::await_first && n == 13 && starts("OK JOIN bench")) return resolve(c, true);
  if (!c.sender && c.state == St::active && starts("MSG bench ")) {
    // "MSG bench <seq> <send_ns>": copy to NUL-terminate for strtoull.
    char tmp[kLine + 1];
    std::memcpy(tmp, p, n);
    tmp[n] = 0;
    char* end = nullptr;
    uint64_t seq = std::strtoull(tmp + 10, &end, 10);
    uint64_t ts = std::strtoull(end, &end, 10);
    uint64_t now = now_ns();
    bump(deliveries);
    if (ts && now >= ts) hist.record(now - ts);
    if (seq > c.last_seq) {
      ++c.got;  // gaps show up as sent - got at the end
      c.last_seq = seq;
    } else {
      bump(errors);  // duplicate or out of order
    }
    return;
  }
  bump(errors);  // ERROR <reason>, or anything we did not ask for
}

void Worker::sender_tick(uint64_t now) {
  if (sender_->state != St::active || ctl_.phase.load(std::memory_order_relaxed) != kChatSend) return;
  if (!send_start_ns_) send_start_ns_ = now;
  auto due = static_cast<uint64_t>(static_cast<double>(now - send_start_ns_) / 1e9 * cfg_.msg_rate) + 1;
  if (sbuf_off_ > 0 && sent_ < due) {  // keep the unsent tail at the front
    std::memmove(sbuf_.get(), sbuf_.get() + sbuf_off_, sbuf_len_ - sbuf_off_);
    sbuf_len_ -= sbuf_off_;
    sbuf_off_ = 0;
  }
  while (sent_ < due) {
    if (sbuf_len_ + 64 > kScratch) {  // the server stopped reading from us
      bump(errors);
      return;
    }
    ++sent_;
    int len = std::snprintf(sbuf_.get() + sbuf_len_, 64, "MSG bench %llu %llu\n",
                            static_cast<unsigned long long>(sent_),
                            static_cast<unsigned long long>(now_ns()));
    sbuf_len_ += static_cast<size_t>(len);
    ctl_.msgs_sent.store(sent_, std::memory_order_relaxed);
  }
  sender_flush();
}

void Worker::sender_flush() {
  while (sbuf_off_ < sbuf_len_ && sender_->state == St::active) {
    ssize_t w = send(sender_->fd, sbuf_.get() + sbuf_off_, sbuf_len_ - sbuf_off_, MSG_NOSIGNAL);
    if (w > 0) {
      sbuf_off_ += static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    return drop(*sender_);
  }
  if (sbuf_off_ == sbuf_len_) sbuf_off_ = sbuf_len_ = 0;
}

}  // namespace connbench
