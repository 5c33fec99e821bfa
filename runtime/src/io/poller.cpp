#include "io/poller.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace herd::rt {
namespace {
// epoll_data for the eventfd: an address no io_source can have.
char wake_marker;
}  // namespace

poller::poller() {
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  evfd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epfd_ < 0 || evfd_ < 0) {
    std::perror("herd: epoll_create1/eventfd");
    std::abort();
  }
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLET;
  ev.data.ptr = &wake_marker;
  epoll_ctl(epfd_, EPOLL_CTL_ADD, evfd_, &ev);
}

poller::~poller() {
  close(evfd_);
  close(epfd_);
}

int poller::add(int fd, io_source* src, uint32_t events) noexcept {
  epoll_event ev{};
  ev.events = events | EPOLLET;
  ev.data.ptr = src;
  if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) return -errno;
  sources_.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

int poller::del(int fd) noexcept {
  if (epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr) != 0) return -errno;
  sources_.fetch_sub(1, std::memory_order_relaxed);
  return 0;
}

int poller::poll(int timeout_ms, int max_events) noexcept {
  epoll_event evs[256];
  max_events = max_events < 1 ? 1 : max_events > 256 ? 256 : max_events;
  // seq_cst: pairs with qsbr's snapshot of begun() (a poll that starts after
  // the snapshot began its epoll_wait after the EPOLL_CTL_DEL / unpublishing
  // that preceded it, so it cannot return the retired source).
  uint64_t epoch = begun_.fetch_add(1, std::memory_order_seq_cst) + 1;
  int n = epoll_wait(epfd_, evs, max_events, timeout_ms);
  int dispatched = 0;
  // A pipeline of loads ahead of the dispatch (io_source::prefetch): the
  // source four events ahead, then its own stages two and one ahead.
  auto source_at = [&](int k) -> const io_source* {
    void* p = evs[k].data.ptr;
    return p == &wake_marker ? nullptr : static_cast<const io_source*>(p);
  };
  auto stage = [&](int k, int st) {
    if (k >= n) return;
    const io_source* s = source_at(k);
    if (s && s->prefetch) s->prefetch(s, st);
  };
  // Event 0 is dispatched at once: loading ahead for it would gain nothing
  // (and a poll that returns one event, the common case of a quiet node,
  // pays nothing for the pipeline).
  for (int k = 1; k < n && k < 4; ++k) __builtin_prefetch(evs[k].data.ptr);
  stage(1, 0);
  for (int i = 0; i < n; ++i) {
    if (i + 4 < n) __builtin_prefetch(evs[i + 4].data.ptr);
    stage(i + 2, 0);
    stage(i + 1, 1);
    void* p = evs[i].data.ptr;
    if (p == &wake_marker) {
      uint64_t v;
      while (read(evfd_, &v, sizeof v) > 0) {
      }
      continue;
    }
    auto* src = static_cast<io_source*>(p);
    src->on_ready(src, evs[i].events);
    ++dispatched;
  }
  // seq_cst: pairs with qsbr::grace_over's load: the dispatch above is done.
  ended_.store(epoch, std::memory_order_seq_cst);
  return dispatched;
}

void poller::notify() noexcept {
  uint64_t one = 1;
  ssize_t r = write(evfd_, &one, sizeof one);
  (void)r;  // EAGAIN means the counter is saturated: a wake-up is pending anyway
}

}  // namespace herd::rt
