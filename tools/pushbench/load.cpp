#include "load.hpp"

#include "cli.hpp"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <strings.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace pushbench {

using connbench::now_ns;

namespace {
constexpr size_t kReadBuf = 1 << 16;
constexpr uint64_t kPusherTag = 1ull << 63;
constexpr uint64_t kTickTag = 1ull << 62;
// RFC 6455's sample key: its Sec-WebSocket-Accept is known, so the answer is
// checked without a SHA-1 here.
constexpr const char* kKey = "dGhlIHNhbXBsZSBub25jZQ==";
constexpr const char* kAccept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

enum class St : uint8_t { idle, connecting, handshake, open, joining, joined, closed };

// An expected sequence number not known yet: a reconnected user takes the
// first frame of each pusher as its start.
constexpr uint32_t kResync = UINT32_MAX;

bool would_block() { return errno == EAGAIN || errno == EWOULDBLOCK; }

void set_nodelay_nonblock(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}
}  // namespace

struct WsConn {
  int fd = -1;
  uint32_t id = 0;
  St st = St::idle;
  uint64_t t_start = 0;
  std::string in;    // a partial handshake or frame only; empty between reads
  std::string out;   // bytes the kernel did not take yet
  size_t out_off = 0;
  std::string frag;  // a fragmented message being reassembled
  bool in_frag = false;
  // Next sequence number expected per (kind: user/room push, pusher).
  uint32_t expect[2][kMaxPushers] = {};
  bool stormed = false;  // dropped and reconnected by the storm
};

struct Pusher {
  int fd = -1;
  unsigned idx = 0;  // the "pusher" field of its bodies
  bool dead = false;
  std::string out, in;
  size_t out_off = 0;
  int inflight = 0;
  std::vector<uint32_t> user_seq, room_seq;  // next sequence number per target
};

Load::Load(const Config& cfg) : cfg_(cfg), ws_(static_cast<size_t>(cfg.connections)), rbuf_(new char[kReadBuf]) {
  ep_ = epoll_create1(EPOLL_CLOEXEC);
  if (ep_ < 0) throw std::runtime_error("epoll_create1 failed");
  for (size_t i = 0; i < ws_.size(); ++i) ws_[i].id = static_cast<uint32_t>(i);
  t0_ = now_ns();
}

Load::~Load() {
  for (auto& w : ws_)
    if (w.fd >= 0) close(w.fd);
  for (auto& p : pushers_)
    if (p->fd >= 0) close(p->fd);
  if (tick_fd_ >= 0) close(tick_fd_);
  if (ep_ >= 0) close(ep_);
}

int Load::connect_to(uint32_t id) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // Spread over 127.0.0.x so that many connections to one port do not
  // run out of ephemeral ports (as connbench --sources).
  if (!connbench::bind_source(fd, cfg_.sources, id)) {
    close(fd);
    return -1;
  }
  if (connect(fd, reinterpret_cast<const sockaddr*>(&cfg_.dst), sizeof cfg_.dst) != 0 && errno != EINPROGRESS) {
    close(fd);
    return -1;
  }
  return fd;
}

void Load::open_due(uint64_t now) {
  const double due = cfg_.rate * static_cast<double>(now - t0_) / 1e9 + 1;
  while (next_open_ < ws_.size() && static_cast<double>(next_open_) < due) open_conn(ws_[next_open_++], now);
}

void Load::open_conn(WsConn& w, uint64_t now) {
  w.t_start = now;
  ++c_.opened;
  w.fd = connect_to(w.id);
  if (w.fd < 0) {
    conn_failed(w);
    w.st = St::closed;
    return;
  }
  w.st = St::connecting;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP;
  ev.data.u64 = w.id;
  epoll_ctl(ep_, EPOLL_CTL_ADD, w.fd, &ev);
}

void Load::conn_failed(WsConn& w) { ++(w.stormed ? c_.storm_refused : c_.failed); }

void Load::conn_back() {
  ++c_.storm_back;
  storm_last_back_ns_ = now_ns();
}

void Load::start_storm() {
  storm_t0_ = now_ns();
  storm_next_ = 0;
}

void Load::storm_due(uint64_t now) {
  if (!storm_t0_) return;
  const size_t n = std::min(static_cast<size_t>(cfg_.storm), ws_.size());
  const double due = static_cast<double>(n) * static_cast<double>(now - storm_t0_) / (cfg_.storm_window * 1e9) + 1;
  while (storm_next_ < n && static_cast<double>(storm_next_) < due) {
    WsConn& w = ws_[storm_next_++];
    if (w.fd < 0) continue;  // already gone: not ours to count
    if (w.id % 2 == 0) {  // a reset, as a crashed client or a NAT timeout
      linger l{1, 0};
      setsockopt(w.fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    }
    ws_drop(w, false);
    ++c_.storm_dropped;
    w.stormed = true;
    std::string().swap(w.frag);
    w.in_frag = false;
    for (auto& k : w.expect)
      for (auto& e : k) e = kResync;
    open_conn(w, now);
  }
}

bool Load::storm_over() const {
  return storm_t0_ && storm_next_ >= std::min(static_cast<size_t>(cfg_.storm), ws_.size()) &&
         c_.storm_back + c_.storm_refused >= c_.storm_dropped;
}

StableLoss Load::stable_loss() const {
  StableLoss r;
  for (const auto& w : ws_) {
    if (w.stormed || (w.st != St::open && w.st != St::joined)) continue;
    ++r.connections;
    for (const auto& p : pushers_) {
      const uint32_t u = p->user_seq[w.id], got_u = w.expect[0][p->idx];
      if (u > got_u) r.lost += u - got_u;
      if (cfg_.rooms > 0) {
        const uint32_t rs = p->room_seq[w.id % static_cast<uint32_t>(cfg_.rooms)], got_r = w.expect[1][p->idx];
        if (rs > got_r) r.lost += rs - got_r;
      }
    }
  }
  return r;
}

void Load::expire_connects(uint64_t now) {
  const uint64_t limit = static_cast<uint64_t>(cfg_.connect_timeout * 1e9);
  for (size_t i = 0; i < next_open_; ++i) {
    WsConn& w = ws_[i];
    if ((w.st == St::connecting || w.st == St::handshake) && now - w.t_start > limit) {
      conn_failed(w);
      ws_drop(w, false);
    }
  }
}

void Load::ws_drop(WsConn& w, bool count) {
  if (w.fd >= 0) close(w.fd);  // closing removes it from the epoll set
  w.fd = -1;
  w.st = St::closed;
  std::string().swap(w.in);
  std::string().swap(w.out);
  if (count) ++c_.disconnects;
}

void Load::step(int timeout_ms) {
  const uint64_t now = now_ns();
  open_due(now);
  storm_due(now);
  if (tick_fd_ < 0) push_due(now);
  epoll_event evs[256];
  int n = epoll_wait(ep_, evs, 256, cfg_.busy_poll && pushing_ ? 0 : timeout_ms);
  for (int i = 0; i < n; ++i) {
    const uint64_t d = evs[i].data.u64;
    if (d == kTickTag) {
      uint64_t expirations;
      if (read(tick_fd_, &expirations, sizeof expirations) < 0 && !would_block())
        throw std::runtime_error("timerfd read failed");
      push_due(now_ns());
    } else if (d & kPusherTag)
      on_pusher(*pushers_[d & ~kPusherTag], evs[i].events);
    else
      on_ws(ws_[d], evs[i].events);
  }
  if (now - last_expiry_ns_ > 100'000'000) {
    last_expiry_ns_ = now;
    expire_connects(now);
  }
}

void Load::on_ws(WsConn& w, uint32_t ev) {
  if (w.st == St::closed) return;
  if (w.st == St::connecting && (ev & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(w.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      conn_failed(w);
      ws_drop(w, false);
      return;
    }
    char req[256];
    int m = std::snprintf(req, sizeof req,
                          "GET /ws?user=u%u HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                          "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n",
                          w.id, kKey);
    w.st = St::handshake;
    w.out.append(req, static_cast<size_t>(m));
  }
  if (ev & EPOLLOUT) ws_flush(w);
  if (w.st != St::closed && (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) ws_read(w);
}

void Load::ws_flush(WsConn& w) {
  while (w.out_off < w.out.size()) {
    ssize_t k = send(w.fd, w.out.data() + w.out_off, w.out.size() - w.out_off, MSG_NOSIGNAL);
    if (k < 0) {
      if (!would_block()) ws_drop(w, w.st != St::handshake);
      return;
    }
    w.out_off += static_cast<size_t>(k);
  }
  w.out.clear();
  w.out_off = 0;
}

void Load::ws_read(WsConn& w) {
  for (;;) {
    ssize_t k = recv(w.fd, rbuf_.get(), kReadBuf, 0);
    if (k == 0 || (k < 0 && !would_block())) {
      if (w.st == St::handshake) conn_failed(w);
      ws_drop(w, w.st != St::handshake);
      return;
    }
    if (k < 0) return;
    const char* p = rbuf_.get();
    size_t n = static_cast<size_t>(k);
    if (w.st == St::handshake) {
      w.in.append(p, n);
      size_t end = w.in.find("\r\n\r\n");
      if (end == std::string::npos) {
        if (w.in.size() > 8192) {
          conn_failed(w);
          ws_drop(w, false);
          return;
        }
        continue;
      }
      const std::string_view head(w.in.data(), end);
      if (head.rfind("HTTP/1.1 101", 0) != 0 || head.find(kAccept) == std::string_view::npos) {
        conn_failed(w);
        std::fprintf(stderr, "pushbench: upgrade refused: %.*s\n",
                     static_cast<int>(std::min<size_t>(head.size(), 80)), head.data());
        ws_drop(w, false);
        return;
      }
      w.st = St::open;
      if (!w.stormed) {
        ++c_.upgraded;
        last_upgrade_ns_ = now_ns();
      } else if (cfg_.rooms > 0) {  // back once it is in its room again
        w.st = St::joining;
        char cmd[32];
        int m = std::snprintf(cmd, sizeof cmd, "join r%u", w.id % static_cast<unsigned>(cfg_.rooms));
        ws_send(w, 0x1, std::string_view(cmd, static_cast<size_t>(m)));
      } else {
        conn_back();
      }
      w.in.erase(0, end + 4);
      std::string rest;
      rest.swap(w.in);
      size_t used = ws_frames(w, rest.data(), rest.size());
      if (w.st != St::closed) w.in.assign(rest, used);
      continue;
    }
    if (w.in.empty()) {
      size_t used = ws_frames(w, p, n);
      if (w.st != St::closed && used < n) w.in.assign(p + used, n - used);
    } else {
      w.in.append(p, n);
      size_t used = ws_frames(w, w.in.data(), w.in.size());
      if (w.st != St::closed) w.in.erase(0, used);
    }
    if (w.st == St::closed) return;
  }
}

// Parses whole server frames from [p, p+n); returns the bytes consumed.
size_t Load::ws_frames(WsConn& w, const char* p, size_t n) {
  size_t off = 0;
  while (n - off >= 2) {
    const auto* b = reinterpret_cast<const unsigned char*>(p + off);
    const bool fin = b[0] & 0x80;
    const int opcode = b[0] & 0x0f;
    const bool masked = b[1] & 0x80;
    uint64_t len = b[1] & 0x7f;
    size_t hdr = 2;
    if (len == 126) {
      if (n - off < 4) break;
      len = (uint64_t{b[2]} << 8) | b[3];
      hdr = 4;
    } else if (len == 127) {
      if (n - off < 10) break;
      len = 0;
      for (int i = 0; i < 8; ++i) len = (len << 8) | b[2 + i];
      hdr = 10;
    }
    if (masked) {  // servers must not mask; count it and stop trusting the stream
      ++c_.bad_frames;
      ws_drop(w, true);
      return off;
    }
    if (n - off - hdr < len) break;
    std::string_view payload(p + off + hdr, static_cast<size_t>(len));
    off += hdr + static_cast<size_t>(len);
    if (opcode == 0x9) {
      ++c_.pings;
      ws_send(w, 0xA, payload);
    } else if (opcode == 0x8) {
      int code = payload.size() >= 2 ? (static_cast<unsigned char>(payload[0]) << 8) |
                                           static_cast<unsigned char>(payload[1])
                                     : 1005;
      ++(code == 1008 ? c_.closes_1008 : c_.closes_other);
      ws_drop(w, true);
      return off;
    } else if (opcode == 0xA) {
    } else if (opcode == 0x1 || opcode == 0x0) {
      if (opcode == 0x1 && fin) {
        ws_message(w, payload);
      } else {
        if (opcode == 0x1) w.frag.clear();
        w.frag.append(payload);
        if (fin) {
          ws_message(w, w.frag);
          std::string().swap(w.frag);
        }
      }
    } else {
      ++c_.bad_frames;
    }
    if (w.st == St::closed) return off;
  }
  return off;
}

void Load::ws_message(WsConn& w, std::string_view m) {
  const uint64_t now = now_ns();
  if (m.size() > 2 && (m[0] == 'U' || m[0] == 'R') && m[1] == ' ') {
    // "U <pusher> <seq> <send ns> <padding>"
    size_t i = 2;
    auto field = [&](uint64_t& v) {
      const size_t from = i;
      v = 0;
      while (i < m.size() && m[i] >= '0' && m[i] <= '9') v = v * 10 + static_cast<uint64_t>(m[i++] - '0');
      const bool ok = i > from && i < m.size() && m[i] == ' ';
      ++i;
      return ok;
    };
    uint64_t src = 0, seq = 0, ts = 0;
    if (!field(src) || !field(seq) || !field(ts) || src >= kMaxPushers) {
      ++c_.bad_frames;
      return;
    }
    ++c_.frames;
    if (ts <= now) hist_.record(now - ts);
    if (ts <= now && m[0] == 'R') room_hist_.record(now - ts);
    if (!cfg_.trace.empty() && ts <= now) trace_.push_back({now, now - ts, m[0]});
    uint32_t& want = w.expect[m[0] == 'R'][src];
    if (seq == want || want == kResync) {
      want = static_cast<uint32_t>(seq) + 1;
    } else if (seq > want) {
      (w.stormed ? c_.storm_gaps : c_.lost_gaps) += seq - want;
      want = static_cast<uint32_t>(seq) + 1;
    } else {
      ++(w.stormed ? c_.storm_out_of_order : c_.out_of_order);
    }
  } else if (m.rfind("ok join ", 0) == 0 && w.st == St::joining) {
    w.st = St::joined;
    if (w.stormed)
      conn_back();
    else
      ++c_.joined;
  } else if (m.rfind("error", 0) == 0) {
    ++c_.error_replies;
  } else {
    ++c_.bad_frames;
  }
}

void Load::ws_send(WsConn& w, uint8_t opcode, std::string_view payload) {
  unsigned char hdr[14];
  size_t h = 0;
  hdr[h++] = static_cast<unsigned char>(0x80 | opcode);
  if (payload.size() < 126) {
    hdr[h++] = static_cast<unsigned char>(0x80 | payload.size());
  } else {
    hdr[h++] = 0x80 | 126;  // our frames stay below 64 KiB
    hdr[h++] = static_cast<unsigned char>(payload.size() >> 8);
    hdr[h++] = static_cast<unsigned char>(payload.size());
  }
  mask_state_ ^= mask_state_ << 13;  // xorshift32: masks need not be strong here
  mask_state_ ^= mask_state_ >> 17;
  mask_state_ ^= mask_state_ << 5;
  std::memcpy(hdr + h, &mask_state_, 4);
  const unsigned char* mask = hdr + h;
  h += 4;
  w.out.append(reinterpret_cast<const char*>(hdr), h);
  for (size_t i = 0; i < payload.size(); ++i) w.out.push_back(static_cast<char>(payload[i] ^ mask[i & 3]));
  ws_flush(w);
}

void Load::start_joins() {
  if (cfg_.rooms <= 0) return;
  for (auto& w : ws_) {
    if (w.st != St::open) continue;
    w.st = St::joining;
    char cmd[32];
    int m = std::snprintf(cmd, sizeof cmd, "join r%u", w.id % static_cast<unsigned>(cfg_.rooms));
    ws_send(w, 0x1, std::string_view(cmd, static_cast<size_t>(m)));
  }
}

// Pushers connect only now: an idle connection that has sent no request for
// 10 s is closed with 408 by the protocol, and the connect phase can be longer.
void Load::start_pushing() {
  for (int k = 0; k < cfg_.pushers; ++k) {
    auto p = std::make_unique<Pusher>();
    p->idx = static_cast<unsigned>(k);
    p->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (p->fd < 0 || connect(p->fd, reinterpret_cast<const sockaddr*>(&cfg_.dst), sizeof cfg_.dst) != 0)
      throw std::runtime_error(std::string("pusher connect: ") + std::strerror(errno));
    set_nodelay_nonblock(p->fd);
    p->user_seq.assign(ws_.size(), 0);
    p->room_seq.assign(static_cast<size_t>(std::max(cfg_.rooms, 1)), 0);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP;
    ev.data.u64 = kPusherTag | static_cast<uint64_t>(k);
    epoll_ctl(ep_, EPOLL_CTL_ADD, p->fd, &ev);
    pushers_.push_back(std::move(p));
  }
  if (cfg_.push_tick_us > 0) {
    tick_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (tick_fd_ < 0) throw std::runtime_error(std::string("timerfd_create: ") + std::strerror(errno));
    const long ns = static_cast<long>(cfg_.push_tick_us) * 1000;
    itimerspec its{};
    its.it_interval = {ns / 1'000'000'000, ns % 1'000'000'000};
    its.it_value = its.it_interval;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kTickTag;
    if (timerfd_settime(tick_fd_, 0, &its, nullptr) != 0 || epoll_ctl(ep_, EPOLL_CTL_ADD, tick_fd_, &ev) != 0)
      throw std::runtime_error(std::string("push tick timer: ") + std::strerror(errno));
  }
  pushing_ = true;
  push_t0_ = now_ns();
  user_pushes_ = room_pushes_ = 0;
}

void Load::stop_pushing() {
  pushing_ = false;
  if (tick_fd_ >= 0) {
    close(tick_fd_);  // also leaves the epoll set
    tick_fd_ = -1;
  }
}

void Load::push_due(uint64_t now) {
  if (!pushing_) return;
  const double el = static_cast<double>(now - push_t0_) / 1e9;
  const uint64_t want_user = static_cast<uint64_t>(cfg_.push_rate * el);
  const uint64_t want_room = cfg_.rooms > 0 ? static_cast<uint64_t>(cfg_.room_rate * el) : 0;
  // More than half a second behind: the server (or we) cannot keep the rate;
  // skip the backlog rather than burst it, and say so in push_late.
  auto catch_up = [&](uint64_t& done, uint64_t want, double rate) {
    if (static_cast<double>(want - std::min(want, done)) > rate / 2 + 1) {
      c_.push_late += want - done;
      done = want;
    }
  };
  catch_up(user_pushes_, want_user, cfg_.push_rate);
  catch_up(room_pushes_, want_room, cfg_.room_rate);
  const size_t k = pushers_.size();
  while (user_pushes_ < want_user || room_pushes_ < want_room) {
    Pusher* p = nullptr;
    for (size_t i = 0; i < k && !p; ++i) {
      Pusher& c = *pushers_[next_pusher_++ % k];
      if (!c.dead && c.inflight < cfg_.pipeline) p = &c;
    }
    if (!p) break;  // every pusher is at its pipeline depth: retry next step
    const bool room = room_pushes_ < want_room &&
                      (user_pushes_ >= want_user || room_pushes_ * cfg_.push_rate <= user_pushes_ * cfg_.room_rate);
    push_one(*p, room, now);
    ++(room ? room_pushes_ : user_pushes_);
  }
  for (auto& p : pushers_)
    if (!p->out.empty() && !p->dead) pusher_flush(*p);
}

void Load::push_one(Pusher& p, bool room, uint64_t) {
  const unsigned idx = p.idx;
  const uint32_t target = room ? next_room_++ % static_cast<uint32_t>(cfg_.rooms)
                               : next_user_++ % static_cast<uint32_t>(ws_.size());
  const uint32_t seq = room ? p.room_seq[target]++ : p.user_seq[target]++;
  char body[96];
  int b = std::snprintf(body, sizeof body, "%c %u %u %llu ", room ? 'R' : 'U', idx, seq,
                        static_cast<unsigned long long>(now_ns()));  // just before the POST
  const size_t pad = static_cast<size_t>(std::max(0, cfg_.payload - b));
  char head[160];
  int h = std::snprintf(head, sizeof head,
                        "POST /push/%s/%c%u HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
                        "Content-Length: %zu\r\n\r\n",
                        room ? "room" : "user", room ? 'r' : 'u', target, static_cast<size_t>(b) + pad);
  p.out.append(head, static_cast<size_t>(h));
  p.out.append(body, static_cast<size_t>(b));
  p.out.append(pad, 'x');
  ++p.inflight;
  ++c_.pushes_sent;
}

void Load::on_pusher(Pusher& p, uint32_t ev) {
  if (p.dead) return;
  if (ev & EPOLLOUT) pusher_flush(p);
  if (p.dead || !(ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) return;
  for (;;) {
    ssize_t k = recv(p.fd, rbuf_.get(), kReadBuf, 0);
    if (k == 0 || (k < 0 && !would_block())) {
      std::fprintf(stderr, "pushbench: a push connection was closed by the server\n");
      p.dead = true;
      c_.push_errors += static_cast<uint64_t>(p.inflight);
      return;
    }
    if (k < 0) break;
    p.in.append(rbuf_.get(), static_cast<size_t>(k));
  }
  pusher_replies(p);
}

void Load::pusher_flush(Pusher& p) {
  while (p.out_off < p.out.size()) {
    ssize_t k = send(p.fd, p.out.data() + p.out_off, p.out.size() - p.out_off, MSG_NOSIGNAL);
    if (k < 0) {
      if (!would_block()) p.dead = true;
      return;
    }
    p.out_off += static_cast<size_t>(k);
  }
  p.out.clear();
  p.out_off = 0;
}

// Answers come in request order (HTTP/1.1 pipelining): status, Content-Length
// and {"delivered":N} are all we need from each.
void Load::pusher_replies(Pusher& p) {
  size_t off = 0;
  for (;;) {
    size_t end = p.in.find("\r\n\r\n", off);
    if (end == std::string::npos) break;
    const char* head = p.in.data() + off;
    const size_t head_len = end - off;
    size_t clen = 0;
    for (size_t i = 0; i + 17 < head_len; ++i)
      if (strncasecmp(head + i, "\r\ncontent-length:", 17) == 0) {
        clen = std::strtoul(head + i + 17, nullptr, 10);
        break;
      }
    if (p.in.size() < end + 4 + clen) break;
    const int status = head_len > 12 ? std::atoi(head + 9) : 0;
    const std::string_view body(p.in.data() + end + 4, clen);
    off = end + 4 + clen;
    --p.inflight;
    size_t d = body.find("\"delivered\":");
    if (status == 200 && d != std::string_view::npos) {
      ++c_.push_replies;
      uint64_t n = 0;
      for (size_t i = d + 12; i < body.size() && body[i] >= '0' && body[i] <= '9'; ++i) n = n * 10 + (body[i] - '0');
      c_.expected += n;
    } else {
      ++c_.push_errors;
    }
  }
  p.in.erase(0, off);
}

}  // namespace pushbench
