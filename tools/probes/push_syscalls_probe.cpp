// What a gateway push costs the server in syscalls, readiness against
// io_uring, on loopback (docs/push-gateway.md, "Syscalls per push, probed").
//
// A push in the gateway is: a request arrives on one connection ("http"), the
// server writes a frame to another ("ws") and a response to the first. With
// readiness that is epoll_wait, recv, send, send: four syscalls, each ~1 µs
// in this guest before any network work. With io_uring the two sends and the
// next receive go in one io_uring_enter, which also waits for that receive.
// This program measures the server's CPU per push both ways, nothing else in
// it: no parsing, no actors.
//
//   g++ -O2 -std=c++20 tools/probes/push_syscalls_probe.cpp -o /tmp/probe -luring
//   /tmp/probe MODE GAP_US N      MODE: epoll | uring;  GAP_US: the client's
//                                  pause between pushes (0: the next at once)
//
// The server runs pinned to CPU 0, the client (a child process) to CPU 1,
// busy-polling so that its own wake-ups are never the server's cost (as
// pushbench --busy-poll 1). Prints one line:
//   RESULT probe=push_syscalls mode=.. gap_us=.. n=.. server_cpu_us_per_push=..
//          user_us=.. sys_us=.. syscalls_per_push=.. rtt_p50_us=..
// Needs liburing-dev (Debian) to build; it is not part of the CMake build.
// Two knobs that checked a difference from herd's gateway and found none on
// this host: PROBE_TIMEOUT_MS=10 gives the server's epoll_wait a timeout (an
// hrtimer armed per sleep, as a worker with timers has), PROBE_CLIENT_EPOLL=1
// has the client poll an epoll set as pushbench does instead of reading both
// sockets in turn.
#include <liburing.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr size_t req_len = 120, resp_len = 40, frame_len = 70;

[[noreturn]] void die(const char* what) {
  std::perror(what);
  std::exit(2);
}

void pin(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  if (sched_setaffinity(0, sizeof s, &s) != 0) die("sched_setaffinity");
}

void nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

double cpu_us(const rusage& a, const rusage& b, bool user) {
  const timeval& x = user ? a.ru_utime : a.ru_stime;
  const timeval& y = user ? b.ru_utime : b.ru_stime;
  return double(y.tv_sec - x.tv_sec) * 1e6 + double(y.tv_usec - x.tv_usec);
}

// The client: `n` pushes, each `gap_us` after the previous one's replies;
// waits (spinning on non-blocking reads) for the response and the frame.
void client(uint16_t port, int gap_us, long n, int report_fd) {
  pin(1);
  auto conn = [&] {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) die("connect");
    nodelay(fd);
    return fd;
  };
  int http = conn(), ws = conn();
  int ep = -1;
  if (std::getenv("PROBE_CLIENT_EPOLL")) {
    ep = epoll_create1(0);
    for (int fd : {http, ws}) {
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLET;
      ev.data.fd = fd;
      epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    }
  }
  char req[req_len];
  std::memset(req, 'r', sizeof req);
  char buf[4096];
  std::vector<double> rtt;
  rtt.reserve(size_t(n));
  for (long i = 0; i < n; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    if (gap_us > 0)
      while (std::chrono::steady_clock::now() - t0 < std::chrono::microseconds(gap_us)) {
      }
    auto s = std::chrono::steady_clock::now();
    if (send(http, req, sizeof req, 0) != long(sizeof req)) die("client send");
    size_t got_resp = 0, got_frame = 0;
    while (got_resp < resp_len || got_frame < frame_len) {
      if (ep >= 0) {  // as pushbench --busy-poll 1: poll the set, read what is ready
        epoll_event evs[4];
        int k = epoll_wait(ep, evs, 4, 0);
        for (int j = 0; j < k; ++j) {
          int fd = evs[j].data.fd;
          long r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
          if (r == 0) die("server closed");
          if (r > 0) (fd == http ? got_resp : got_frame) += size_t(r);
        }
        continue;
      }
      long r = recv(http, buf, sizeof buf, MSG_DONTWAIT);
      if (r > 0) got_resp += size_t(r);
      else if (r == 0) die("server closed");
      r = recv(ws, buf, sizeof buf, MSG_DONTWAIT);
      if (r > 0) got_frame += size_t(r);
      else if (r == 0) die("server closed");
    }
    rtt.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - s).count());
  }
  std::sort(rtt.begin(), rtt.end());
  double p50 = rtt[rtt.size() / 2];
  if (write(report_fd, &p50, sizeof p50) != sizeof p50) die("report");
  close(http);
  close(ws);
}

void serve_epoll(int http, int ws, long n, long& syscalls) {
  int ep = epoll_create1(0);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLET;
  epoll_ctl(ep, EPOLL_CTL_ADD, http, &ev);
  const char* t = std::getenv("PROBE_TIMEOUT_MS");  // read once: not per push
  const int timeout_ms = t ? std::atoi(t) : -1;
  char buf[65536], resp[resp_len], frame[frame_len];
  std::memset(resp, 'h', sizeof resp);
  std::memset(frame, 'f', sizeof frame);
  size_t pending = 0;
  for (long done = 0; done < n;) {
    epoll_event out[8];
    ++syscalls;
    if (epoll_wait(ep, out, 8, timeout_ms) < 0 && errno != EINTR) die("epoll_wait");
    ++syscalls;
    long r = recv(http, buf, sizeof buf, 0);  // a short read means drained (edge-triggered)
    if (r <= 0) continue;
    pending += size_t(r);
    while (pending >= req_len) {
      pending -= req_len;
      ++syscalls;
      if (send(ws, frame, sizeof frame, MSG_NOSIGNAL) != long(sizeof frame)) die("send frame");
      ++syscalls;
      if (send(http, resp, sizeof resp, MSG_NOSIGNAL) != long(sizeof resp)) die("send resp");
      ++done;
    }
  }
  close(ep);
}

void serve_uring(int http, int ws, long n, long& syscalls) {
  io_uring ring;
  io_uring_params p{};
  p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  if (int e = io_uring_queue_init_params(64, &ring, &p); e < 0) {
    errno = -e;
    die("io_uring_queue_init");
  }
  static char buf[65536], resp[resp_len], frame[frame_len];
  std::memset(resp, 'h', sizeof resp);
  std::memset(frame, 'f', sizeof frame);
  enum : uint64_t { tag_recv = 1, tag_send = 2 };
  auto post_recv = [&] {
    io_uring_sqe* s = io_uring_get_sqe(&ring);
    io_uring_prep_recv(s, http, buf, sizeof buf, 0);
    io_uring_sqe_set_data64(s, tag_recv);
  };
  post_recv();
  unsigned in_flight = 1;
  size_t pending = 0;
  for (long done = 0; done < n;) {
    ++syscalls;
    // Submits what was queued (the sends and the next receive) and waits for
    // all of them: the sends complete inline on loopback, so this returns
    // when the next request is in; one syscall per push.
    if (int e = io_uring_submit_and_wait(&ring, in_flight); e < 0 && e != -EINTR) {
      errno = -e;
      die("io_uring_submit_and_wait");
    }
    io_uring_cqe* cqe;
    unsigned head, seen = 0;
    long got = -1;
    io_uring_for_each_cqe(&ring, head, cqe) {
      ++seen;
      --in_flight;
      if (io_uring_cqe_get_data64(cqe) == tag_recv) got = cqe->res;
      else if (cqe->res < 0) {
        errno = -cqe->res;
        die("send");
      }
    }
    io_uring_cq_advance(&ring, seen);
    if (got < 0) continue;
    if (got == 0) break;
    pending += size_t(got);
    while (pending >= req_len) {
      pending -= req_len;
      io_uring_sqe* s = io_uring_get_sqe(&ring);
      io_uring_prep_send(s, ws, frame, sizeof frame, MSG_NOSIGNAL);
      io_uring_sqe_set_data64(s, tag_send);
      s = io_uring_get_sqe(&ring);
      io_uring_prep_send(s, http, resp, sizeof resp, MSG_NOSIGNAL);
      io_uring_sqe_set_data64(s, tag_send);
      in_flight += 2;
      ++done;
    }
    post_recv();
    ++in_flight;
  }
  io_uring_submit(&ring);  // the last sends
  io_uring_queue_exit(&ring);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s epoll|uring GAP_US N\n", argv[0]);
    return 2;
  }
  std::string mode = argv[1];
  int gap = std::atoi(argv[2]);
  long n = std::atol(argv[3]);
  if ((mode != "epoll" && mode != "uring") || gap < 0 || n < 100) {
    std::fprintf(stderr, "bad arguments\n");
    return 2;
  }
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof a;
  if (bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(lfd, 4) != 0) die("listen");
  getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &al);
  int rep[2];
  if (pipe(rep) != 0) die("pipe");
  pid_t child = fork();
  if (child == 0) {
    close(rep[0]);
    client(ntohs(a.sin_port), gap, n, rep[1]);
    _exit(0);
  }
  close(rep[1]);
  pin(0);
  int http = accept(lfd, nullptr, nullptr), ws = accept(lfd, nullptr, nullptr);
  if (http < 0 || ws < 0) die("accept");
  nodelay(http);
  nodelay(ws);
  long syscalls = 0;
  rusage r0, r1;
  getrusage(RUSAGE_SELF, &r0);
  if (mode == "epoll") serve_epoll(http, ws, n, syscalls);
  else serve_uring(http, ws, n, syscalls);
  getrusage(RUSAGE_SELF, &r1);
  double p50 = 0;
  if (read(rep[0], &p50, sizeof p50) != sizeof p50) die("client report");
  int st = 0;
  waitpid(child, &st, 0);
  double u = cpu_us(r0, r1, true) / double(n), s = cpu_us(r0, r1, false) / double(n);
  std::printf("RESULT probe=push_syscalls mode=%s gap_us=%d n=%ld server_cpu_us_per_push=%.2f user_us=%.2f sys_us=%.2f "
              "syscalls_per_push=%.2f rtt_p50_us=%.1f\n",
              mode.c_str(), gap, n, u + s, u, s, double(syscalls) / double(n), p50);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
