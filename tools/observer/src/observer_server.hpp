// The observer's thread and everything it owns (see observer_server.cpp).
#pragma once
#include "client.hpp"
#include "dispatch.hpp"
#include "sampler.hpp"

#include <herd/actors/introspect.hpp>
#include <herd/observer/observer.hpp>
#include <herd/runtime/thread_safety.hpp>

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace herd::observer {

// The loop's eventfd: shared with the helpers of `load`, which may finish
// after the server is gone.
struct waker {
  int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  waker() = default;
  waker(const waker&) = delete;
  waker& operator=(const waker&) = delete;
  ~waker() {
    if (fd >= 0) ::close(fd);
  }
  void wake() const {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(fd, &one, sizeof one);
  }
};

class server {
 public:
  // Takes ownership of the listening fds (metrics_fd may be -1); o's
  // limits are its pacing (o.path is `path`).
  server(int unix_fd, std::string path, int metrics_fd, uint16_t metrics_port, const options& o = {});
  ~server();  // stops and joins the thread, closes everything, unlinks the socket
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  void start();
  const std::string& path() const noexcept { return path_; }
  uint16_t metrics_port() const noexcept { return metrics_port_; }

 private:
  struct trace_stream {
    uint64_t client_key;
    json id;
    std::unique_ptr<introspect::tracer> t;
    uint64_t deadline_ms;  // steady clock
    uint64_t sent = 0;
  };
  struct http_client {
    int fd = -1;
    std::string in, out;
    std::size_t out_off = 0;
    bool answered = false, dead = false;
    uint64_t accepted_ms = 0;  // steady: unanswered past the idle timeout, it is closed
  };
  // A `load` answered by a helper process (its factory may take its time);
  // its client's later requests wait for it.
  struct load_job {
    rt::mutex m;
    bool done HERD_GUARDED_BY(m) = false;
    std::string reply HERD_GUARDED_BY(m);
    std::shared_ptr<waker> wake;  // written when done (outlives the server if need be)
  };
  struct pending_load {
    uint64_t client_key;
    std::shared_ptr<load_job> job;
  };

  void run();
  void accept_clients();
  void accept_http();
  void read_client(client& c, bool drain);
  bool answer_one(client& c);  // false: no request waited
  void answer_requests();
  client* next_ready(uint64_t now_ns);
  int pacing_timeout_ms(uint64_t now_ns) const;
  bool may_idle(const client& c) const;
  uint64_t idle_ms(const client& c, uint64_t now_ms) const;  // 0: not idle (or may not be)
  void expire_idle(const std::vector<uint64_t>& polled_quiet, uint64_t now_ms);
  void start_load(std::string_view line);
  void collect_loads();
  void serve_http(http_client& h);
  void pump_traces();
  int next_trace_deadline_ms() const;
  client* find(uint64_t key);
  void drop_dead();
  void release(int fd);  // closes a client's fd, or keeps it (shut) as the spare

  int unix_fd_, metrics_fd_;
  std::shared_ptr<waker> wake_;
  int wake_fd_;
  int spare_fd_;  // given up to accept a client when the node is out of fds (-1: in use)
  std::string path_;
  uint16_t metrics_port_;
  std::atomic<bool> stop_{false};
  std::thread thread_;

  // The observer thread's own (no locks).
  sampler samples_;
  introspect::reductions_sample rate_baseline_;  // 16 bytes a process while top runs
  dispatch_env env_;
  std::list<client> clients_;
  // A reply above big_reply bytes was made: malloc_trim once the clients have theirs.
  static constexpr std::size_t big_reply = 256 * 1024;
  bool trim_due_ = false;
  bool answered_since_trim_ = false;  // trim after a second without requests
  uint64_t last_answer_ms_ = 0;       // steady ms
  std::vector<http_client> http_;
  std::list<trace_stream> traces_;
  uint64_t next_key_ = 1;
  uint64_t accept_paused_until_ = 0;  // steady ms; out of fds and no spare
  client* current_ = nullptr;  // the client whose request is being answered
  std::list<pending_load> loads_;
  // Pacing (observer_server.cpp): the limits, the CPU budget of all requests, and
  // the fair-share clock (the vtime of the request answered last).
  options limits_;
  token_bucket cpu_;
  uint64_t vclock_ = 0;
};

}  // namespace herd::observer
