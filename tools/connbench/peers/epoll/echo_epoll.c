/* echo_epoll: the plain-C limit herd's echo server is compared against.
 *
 *   echo_epoll [--port P] [--threads N] [--footprint STACK,HEAP[,SLOT_KIB]]
 *                                            (P = 0 picks a free port)
 *
 * One thread per core, each with its own epoll instance and its own
 * SO_REUSEPORT listening socket. Chosen over one shared listener with
 * EPOLLEXCLUSIVE because the kernel then spreads new connections over
 * per-thread accept queues: no accept-queue lock shared by the threads and
 * no thread woken for a connection another thread takes. (Its drawback, a
 * busy thread's queue waiting while others idle, does not matter for an
 * echo load that is uniform across connections.)
 *
 * Edge-triggered: accept4 until EAGAIN, read until EAGAIN, write back at
 * once. A write that would block leaves the rest in a per-connection buffer
 * (allocated only then, so idle connections cost a few dozen bytes) and the
 * connection is not read again until EPOLLOUT has drained it: memory per
 * connection is bounded by one read chunk.
 *
 * --footprint (an experiment, off by default): per message, also touch STACK
 * bytes at the top of a per-connection slot (64 KiB apart, as herd's
 * default stacks, or SLOT_KIB) and HEAP bytes of a
 * per-connection heap block, read and written a line at a time. It gives
 * this server the per-connection memory traffic of an actor (the frames of
 * its parked stack, its control block) without its instructions, to price
 * that traffic on its own (docs/echo-path.md). With --footprint, SIGUSR1
 * turns the touching off and on (it starts on) and prints a line for the
 * window that ends: its state, the messages echoed, the process's CPU ns.
 * Windows that alternate every second or two, paired, price the footprint
 * against the same server under the same host phase (footprint_ab.py).
 *
 * SIGTERM/SIGINT: the main thread waits for them with sigwait, then wakes
 * every worker through an eventfd; exit status 0.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (64 * 1024)
#define MAX_EVENTS 512

struct conn {
  int fd;
  uint32_t len, off; /* unsent bytes in buf[off, len) */
  char *buf;         /* NULL unless a write has blocked */
  char *heap;        /* --footprint only */
};

#define MAX_SLOT (1024 * 1024)
static size_t fp_stack, fp_heap; /* --footprint */
static size_t fp_slot = 64 * 1024;
static int fp_given;              /* set once, before the workers start */
static _Atomic int fp_on = 1;     /* SIGUSR1 flips it */
/* Readinesses served, all workers: one per message under connbench's load
 * (one message outstanding per connection). */
static _Atomic uint64_t echoed;
static char *fp_slots;           /* one slot per descriptor number */
static long fp_nslots;

static void touch(volatile char *p, size_t n) {
  for (size_t i = 0; i < n; i += 64) p[i] = (char)(p[i] + 1);
}

/* Out of line: without --footprint the echo path pays one predictable test
 * of a read-only flag, and the comparison's baseline stays the plain server. */
__attribute__((noinline)) static void footprint(const struct conn *c) {
  if (atomic_load_explicit(&fp_on, memory_order_relaxed)) {
    if (fp_stack && c->fd < fp_nslots) touch(fp_slots + (size_t)(c->fd + 1) * fp_slot - fp_stack, fp_stack);
    if (c->heap) touch(c->heap, fp_heap);
  }
  atomic_fetch_add_explicit(&echoed, 1, memory_order_relaxed);
}

struct worker {
  pthread_t thread;
  int ep, lfd, reserve_fd;
  char scratch[CHUNK];
};

static int stop_fd = -1;
/* Tags in epoll data.ptr for the two non-connection descriptors. */
static char listen_tag, stop_tag;

static void die(const char *what) {
  perror(what);
  exit(1);
}

static void close_conn(struct conn *c) {
  close(c->fd); /* also removes it from the epoll set */
  free(c->buf);
  free(c->heap);
  free(c);
}

/* Sends buf[off, len); returns 1 when all sent, 0 if it would block, -1 on error. */
static int flush(struct conn *c) {
  while (c->off < c->len) {
    ssize_t w = send(c->fd, c->buf + c->off, c->len - c->off, MSG_NOSIGNAL);
    if (w > 0) {
      c->off += (uint32_t)w;
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return 0;
    } else {
      return -1;
    }
  }
  c->len = c->off = 0;
  return 1;
}

/* Reads until EAGAIN, echoing each chunk. Returns -1 when the connection is done. */
static int echo(struct worker *w, struct conn *c) {
  if (fp_given) footprint(c);
  for (;;) {
    ssize_t r = recv(c->fd, w->scratch, CHUNK, 0);
    if (r == 0) return -1;
    if (r < 0) {
      if (errno == EINTR) continue;
      return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    }
    size_t done = 0;
    while (done < (size_t)r) {
      ssize_t s = send(c->fd, w->scratch + done, (size_t)r - done, MSG_NOSIGNAL);
      if (s > 0) {
        done += (size_t)s;
      } else if (s < 0 && errno == EINTR) {
        continue;
      } else if (s < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        /* Park the rest and stop reading: EPOLLOUT resumes us. */
        if (!c->buf && !(c->buf = malloc(CHUNK))) return -1;
        memcpy(c->buf, w->scratch + done, (size_t)r - done);
        c->len = (uint32_t)((size_t)r - done);
        c->off = 0;
        return 0;
      } else {
        return -1;
      }
    }
  }
}

static void accept_all(struct worker *w) {
  for (;;) {
    int fd = accept4(w->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if ((errno == EMFILE || errno == ENFILE) && w->reserve_fd >= 0) {
        /* Out of fds: with edge triggering the pending connection would
         * never be signalled again. Free the reserve fd to accept and close
         * it, so the client sees a reset instead of hanging. */
        close(w->reserve_fd);
        int victim = accept4(w->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (victim >= 0) close(victim);
        w->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (victim >= 0) continue;
      }
      return; /* EAGAIN, or an error we cannot do anything about */
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct conn *c = calloc(1, sizeof *c);
    if (!c) {
      close(fd);
      continue;
    }
    c->fd = fd;
    if (fp_heap && !(c->heap = calloc(1, fp_heap))) {
      close_conn(c);
      continue;
    }
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = c};
    if (epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
      close_conn(c);
      continue;
    }
    /* Data may already be waiting; the edge for it is reported anyway
     * because the fd was added after it arrived, so nothing to do here. */
  }
}

static void *run(void *arg) {
  struct worker *w = arg;
  struct epoll_event evs[MAX_EVENTS];
  for (;;) {
    int n = epoll_wait(w->ep, evs, MAX_EVENTS, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      die("epoll_wait");
    }
    for (int i = 0; i < n; ++i) {
      void *p = evs[i].data.ptr;
      if (p == &stop_tag) return NULL;
      if (p == &listen_tag) {
        accept_all(w);
        continue;
      }
      struct conn *c = p;
      uint32_t e = evs[i].events;
      int rc = 0;
      if (c->len) { /* blocked writer: drain first, then catch up on reading */
        if (e & (EPOLLOUT | EPOLLERR | EPOLLHUP)) rc = flush(c);
        if (rc == 1) rc = echo(w, c);
      } else if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
        rc = echo(w, c);
      }
      if (rc < 0) close_conn(c);
    }
  }
}

static int somaxconn(void) {
  FILE *f = fopen("/proc/sys/net/core/somaxconn", "r");
  int v = 4096;
  if (f) {
    if (fscanf(f, "%d", &v) != 1) v = 4096;
    fclose(f);
  }
  return v;
}

static int make_listener(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) die("socket");
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0) die("SO_REUSEPORT");
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) die("bind");
  if (listen(fd, somaxconn()) < 0) die("listen");
  return fd;
}

int main(int argc, char **argv) {
  int port = 0;
  long threads = sysconf(_SC_NPROCESSORS_ONLN);
  for (int i = 1; i < argc; ++i) {
    char *end = NULL;
    if (i + 1 < argc && !strcmp(argv[i], "--port")) {
      port = (int)strtol(argv[++i], &end, 10);
      if (*end || port < 0 || port > 65535) goto usage;
    } else if (i + 1 < argc && !strcmp(argv[i], "--threads")) {
      threads = strtol(argv[++i], &end, 10);
      if (*end || threads < 1 || threads > 1024) goto usage;
    } else if (i + 1 < argc && !strcmp(argv[i], "--footprint")) {
      unsigned long st = 0, hp = 0, kib = 64;
      int used = 0, n = sscanf(argv[++i], "%lu,%lu%n,%lu%n", &st, &hp, &used, &kib, &used);
      if (n < 2 || argv[i][used] || kib < 4 || kib > MAX_SLOT / 1024 || (kib & (kib - 1)) || st > kib * 1024 ||
          hp > MAX_SLOT || strchr(argv[i], '-'))
        goto usage;
      fp_stack = st;
      fp_heap = hp;
      fp_slot = kib * 1024;
      fp_given = 1;
    } else {
      goto usage;
    }
  }

  /* One fd per connection: take all the hard limit allows. */
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  if (fp_stack) {
    fp_nslots = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 1048576 ? (long)rl.rlim_cur : 1048576;
    fp_slots = mmap(NULL, (size_t)fp_nslots * fp_slot, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (fp_slots == MAP_FAILED) die("mmap");
  }
  /* Workers inherit this mask, so the signals reach only sigwait below. */
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  if (fp_given) sigaddset(&sigs, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &sigs, NULL);
  signal(SIGPIPE, SIG_IGN);

  stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd < 0) die("eventfd");
  struct worker *ws = calloc((size_t)threads, sizeof *ws);
  if (!ws) die("calloc");
  for (long t = 0; t < threads; ++t) {
    struct worker *w = &ws[t];
    w->lfd = make_listener(port);
    if (port == 0) { /* the others join the port the first one got */
      struct sockaddr_in a;
      socklen_t len = sizeof a;
      getsockname(w->lfd, (struct sockaddr *)&a, &len);
      port = ntohs(a.sin_port);
    }
    w->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if ((w->ep = epoll_create1(EPOLL_CLOEXEC)) < 0) die("epoll_create1");
    struct epoll_event lev = {.events = EPOLLIN | EPOLLET, .data.ptr = &listen_tag};
    if (epoll_ctl(w->ep, EPOLL_CTL_ADD, w->lfd, &lev) < 0) die("epoll_ctl listen");
    /* Level-triggered and never read: once written it wakes every worker. */
    struct epoll_event sev = {.events = EPOLLIN, .data.ptr = &stop_tag};
    if (epoll_ctl(w->ep, EPOLL_CTL_ADD, stop_fd, &sev) < 0) die("epoll_ctl stop");
  }
  for (long t = 0; t < threads; ++t)
    if (pthread_create(&ws[t].thread, NULL, run, &ws[t]) != 0) die("pthread_create");
  printf("listening on 127.0.0.1:%d\n", port);
  fflush(stdout);

  int sig = 0;
  struct timespec t0;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
  uint64_t n0 = 0;
  for (;;) {
    sigwait(&sigs, &sig);
    if (sig != SIGUSR1) break;
    struct timespec t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    uint64_t n1 = atomic_load(&echoed);
    int was = atomic_load(&fp_on);
    atomic_store(&fp_on, !was);
    printf("WINDOW footprint=%d messages=%llu cpu_ns=%lld\n", was, (unsigned long long)(n1 - n0),
           (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
    fflush(stdout);
    t0 = t1;
    n0 = n1;
  }
  uint64_t one = 1;
  if (write(stop_fd, &one, sizeof one) < 0) die("write eventfd");
  for (long t = 0; t < threads; ++t) pthread_join(ws[t].thread, NULL);
  /* Connections are left to exit(): the kernel closes them. */
  return 0;

usage:
  fprintf(stderr, "usage: echo_epoll [--port P] [--threads N] [--footprint STACK,HEAP[,SLOT_KIB]]\n");
  return 2;
}
