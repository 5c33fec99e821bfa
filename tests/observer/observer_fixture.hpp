// A live node for the observer's tests, with the observer started on its
// socket, and a client that speaks the protocol.
//
//   observer_test::live_node n(2, [](observer_test::root_ctx& r) { ...spawn known actors... });
//   observer_test::client c(n.socket());
//   json reply = c.ask({{"v",1},{"req","processes"}});
//
// The node runs on a thread of its own; its root runs `setup`, then waits
// for stop. The test's thread does the client I/O and every Catch2 assertion
// (Catch2 v2 is not thread-safe). Teardown order: the observer, then the
// root's stop, then the node's end (the observer must stop before its node).
#pragma once
#include <herd/actors.hpp>
#include <herd/observer/observer.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <poll.h>
#include <stdlib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace obs_msgs {  // message types of the tests (a named namespace: types are named)
struct junk {
  int n;
};
struct never {};
struct ping {
  int n;
};
struct stop_root {};
}  // namespace obs_msgs

namespace observer_test {

using json = nlohmann::json;
using clk = std::chrono::steady_clock;

// A blocking client connected to 127.0.0.1:port (-1 if refused); *local, if
// given, gets its own address as the node sees it ("127.0.0.1:PORT").
inline int connect_loopback(uint16_t port, std::string* local = nullptr) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  if (local) {
    sockaddr_in me{};
    socklen_t len = sizeof me;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&me), &len);
    *local = "127.0.0.1:" + std::to_string(ntohs(me.sin_port));
  }
  return fd;
}

inline std::string private_dir() {
  char t[] = "/tmp/herd-obs-test-XXXXXX";
  if (!::mkdtemp(t)) throw std::runtime_error("mkdtemp");
  return t;  // mkdtemp makes it 0700
}

// A client of the observer socket: blocking I/O with timeouts.
class client {
 public:
  explicit client(const std::string& path) : client() { connect_to(path); }
  // A socket to connect later: made while descriptors are free, connected
  // when the process has none left (connect needs no new one).
  client() : fd_(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  }
  void connect_to(const std::string& path) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      throw std::runtime_error("connect " + path + ": " + std::strerror(errno));
  }
  ~client() {
    if (fd_ >= 0) ::close(fd_);
  }
  client(const client&) = delete;
  client& operator=(const client&) = delete;
  int fd() const { return fd_; }

  void send_raw(const std::string& bytes) {
    std::size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("send failed");
      off += std::size_t(n);
    }
  }
  // The next line, or "" after `timeout` or at EOF (eof() tells).
  std::string read_line(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    auto deadline = clk::now() + timeout;
    for (;;) {
      auto nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clk::now()).count();
      if (left <= 0 || eof_) return "";
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, int(left)) <= 0) continue;
      char b[65536];
      ssize_t n = ::recv(fd_, b, sizeof b, 0);
      if (n <= 0) {
        eof_ = true;
        continue;
      }
      buf_.append(b, std::size_t(n));
    }
  }
  json read_json(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    std::string l = read_line(timeout);
    if (l.empty()) throw std::runtime_error(eof_ ? "the node closed the connection" : "no reply in time");
    return json::parse(l);
  }
  json ask(const json& req, std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    send_raw(req.dump() + "\n");
    return read_json(timeout);
  }
  bool eof() const { return eof_; }

 private:
  int fd_ = -1;
  std::string buf_;
  bool eof_ = false;
};

// What the root's setup may keep for the test (written before ready()).
struct root_ctx {
  std::mutex m;
  std::vector<herd::pid> pids;
  std::function<void()> on_stop;  // runs in the root before it returns
};

class live_node {
 public:
  live_node(unsigned workers, std::function<void(root_ctx&)> setup, herd::node_options o = {})
      : dir_(private_dir()) {
    o.workers = workers;
    o.quiet = true;
    std::promise<void> ready;
    auto ready_f = ready.get_future();
    thread_ = std::thread([this, o, setup = std::move(setup), &ready]() mutable {
      herd::node n(o);
      reason_ = n.run([&] {
        root_ = herd::self();
        setup(ctx_);
        ready.set_value();
        // Polled, not a message: a foreign thread's send that ends the node
        // races the runtime's stop inside rt::foreign_read_guard (its
        // destructor re-reads current_runtime(), which stop() clears).
        while (!stop_.load()) herd::sleep(std::chrono::milliseconds(20));
        if (ctx_.on_stop) ctx_.on_stop();
      });
    });
    if (ready_f.wait_for(std::chrono::seconds(120)) != std::future_status::ready)
      throw std::runtime_error("the node did not start");
    herd::observer::options oo = options_;
    oo.path = socket();
    oo.metrics_addr = metrics_addr_;
    auto r = herd::observer::start(oo);
    if (!r) throw std::runtime_error("observer: " + r.error);
    obs_ = std::move(r.observer);
  }
  ~live_node() {
    stop_observer();
    stop_.store(true);
    thread_.join();
    std::string cmd = "rm -rf '" + dir_ + "'";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "cannot remove %s\n", dir_.c_str());
  }
  std::string socket() const { return dir_ + "/node.sock"; }
  const std::string& dir() const { return dir_; }
  root_ctx& ctx() { return ctx_; }
  herd::observer::handle& observer() { return *obs_; }
  void stop_observer() { obs_.reset(); }  // before the node stops (the destructor does it too)
  const herd::exit_reason& reason() const { return reason_; }

  static std::string metrics_addr_;  // set by a test before constructing (empty: none)
  static herd::observer::options options_;  // the limits (set before constructing; path is ours)

 private:
  std::string dir_;
  std::thread thread_;
  herd::pid root_;
  root_ctx ctx_;
  herd::exit_reason reason_;
  std::unique_ptr<herd::observer::handle> obs_;
  std::atomic<bool> stop_{false};
};
inline std::string live_node::metrics_addr_;
inline herd::observer::options live_node::options_;

inline json req(const std::string& name, json fields = json::object()) {
  fields["v"] = 1;
  fields["req"] = name;
  return fields;
}

// From the test thread: polls pred() every 5 ms up to `limit`.
template <class P>
bool eventually(P&& pred, std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
  auto t0 = clk::now();
  while (!pred()) {
    if (clk::now() - t0 > limit) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the poll's interval
  }
  return true;
}

}  // namespace observer_test
