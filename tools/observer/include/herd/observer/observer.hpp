// herd::observer — the node side of the observer: a Unix domain socket that
// answers the requests of docs/observer-protocol.md (version 1), and an
// optional Prometheus text endpoint on loopback.
//
//   herd::observer::options o{.path = "/run/user/1000/herd/echo.sock"};
//   auto obs = herd::observer::start(o);       // after the node runs
//   if (!obs) { fprintf(stderr, "%s\n", obs.error.c_str()); ... }
//   ...
//   obs.observer.reset();                       // before the node stops
//
// It runs on a thread of its own (a poll loop): a slow scan, a client that
// stops reading or a request that waits for an actor never occupies a
// worker. Call start() and destroy the handle from any thread that is not a
// worker; the handle must be gone before the node stops.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace herd::observer {

struct options {
  std::string path;          // the socket; its directory must be enterable by this user only
  std::string metrics_addr;  // "127.0.0.1:PORT" (or "[::1]:PORT"): Prometheus text; empty: none
  // What a client may take of the node (docs/observer-protocol.md, "Limits"):
  // a client that sends no request and reads no reply for idle_timeout (and
  // runs no trace) is told `idle_timeout` and closed, as is a metrics
  // connection not answered by then; each client's requests are answered at
  // most requests_per_s a second on average (bursts of request_burst), the
  // rest wait in its socket; and answering all clients together uses at most
  // max_cpu_share of one core on average.
  std::chrono::milliseconds idle_timeout{10000};
  double requests_per_s = 20;
  double request_burst = 40;
  double max_cpu_share = 0.25;
};

class server;

class handle {
 public:
  ~handle();  // stops the thread, closes every connection, removes the socket file
  handle(const handle&) = delete;
  handle& operator=(const handle&) = delete;

  const std::string& path() const noexcept;
  uint16_t metrics_port() const noexcept;  // the bound port (useful with port 0); 0: none

  explicit handle(std::unique_ptr<server> s);

 private:
  std::unique_ptr<server> s_;
};

struct start_result {
  std::unique_ptr<handle> observer;  // null on failure
  std::string error;               // why, for a human
  explicit operator bool() const noexcept { return observer != nullptr; }
};

// Any plain thread, with a node running. Checks the options, opens the
// socket (and the metrics endpoint) and starts the observer's thread.
start_result start(const options& o);

}  // namespace herd::observer
