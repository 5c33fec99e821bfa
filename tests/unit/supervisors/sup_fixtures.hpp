// Tiny named children for the supervisor tests, and helpers.
//
//   worker            receives forever; `crash` throws, `finish` returns,
//                     `quit{r}` exits with r
//   logged(ev, name)  a worker that records "start name" / "stop name"
//                     (the stop from its destructor, however it ends)
//   stubborn          traps exits and ignores them (a shutdown needs kill)
//   slow_cleanup(d)   traps exits; on `shutdown` takes d to clean up, then exits
//
// Catch2 v2 is not thread-safe: bodies record, the test thread checks.
#pragma once
#include <herd/actors.hpp>
#include <herd/actors/logger.hpp>
#include <herd/supervisors/supervisor.hpp>

#include "support/node_fixture.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace sup_test {

namespace sup = herd::supervisor;
using namespace std::chrono_literals;

struct crash {};
struct finish {};
struct quit {
  herd::exit_reason reason;
};
struct ping {
  herd::pid from;
};
struct pong {
  herd::pid who;
};

inline void serve_forever() {
  for (;;)
    herd::receive([](crash) { throw std::runtime_error("crash on request"); },
                  [](finish) { herd::exit(herd::exit_reason::normal()); },
                  [](quit q) { herd::exit(q.reason); },
                  [](ping p) { herd::send(p.from, pong{herd::self()}); });
}

inline void worker() { serve_forever(); }

// What happened, in order, across processes.
class event_log {
 public:
  void add(std::string e) {
    std::lock_guard<std::mutex> g(m_);  // never held across a suspension
    v_.push_back(std::move(e));
  }
  std::vector<std::string> take() {
    std::lock_guard<std::mutex> g(m_);
    return std::exchange(v_, {});
  }
  std::vector<std::string> all() {
    std::lock_guard<std::mutex> g(m_);
    return v_;
  }

 private:
  std::mutex m_;
  std::vector<std::string> v_;
};

// From a process: waits until `ev` holds at least n events. A worker's start
// function logs when its process first runs, which spawn does not promise to
// be before the supervisor call that spawned it returns.
inline void wait_events(event_log& ev, std::size_t n, std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  herd::test::eventually([&] { return ev.all().size() >= n; }, limit);
}

// The events as the supervisor ordered them, as far as a test can see that.
// Stops are in its order (it waits for each). A start is logged when the
// child first runs: on one worker that is spawn order, on several a later
// sibling may run first, so the starts from `first_start` on are sorted there.
inline std::vector<std::string> supervisor_order(std::vector<std::string> ev, std::size_t first_start, unsigned workers) {
  if (workers > 1 && first_start < ev.size()) std::sort(ev.begin() + std::ptrdiff_t(first_start), ev.end());
  return ev;
}

struct stop_recorder {
  event_log* ev;
  std::string name;
  ~stop_recorder() { ev->add("stop " + name); }
};

// A start function for a worker that logs its start and its end.
inline auto logged(event_log& ev, std::string name) {
  return [&ev, name] {
    ev.add("start " + name);
    stop_recorder r{&ev, name};
    serve_forever();
  };
}

inline void stubborn() {
  herd::trap_exit(true);
  for (;;) herd::receive([](herd::exit_msg) {}, [](crash) { throw std::runtime_error("crash"); });
}

inline auto slow_cleanup(std::chrono::milliseconds d, std::atomic<bool>& cleaned) {
  return [d, &cleaned] {
    herd::trap_exit(true);
    for (;;)
      herd::receive([&](herd::exit_msg e) {
        if (e.reason.kind() == herd::exit_kind::shutdown) {
          herd::sleep(d);  // the slow cleanup under test
          cleaned = true;
          herd::exit(e.reason);
        }
      });
  };
}

// From a process: true if p is alive (a monitor on a dead pid says noproc at once).
inline bool alive(herd::pid p) {
  herd::monitor_ref m = herd::monitor(p);
  bool dead = herd::receive(herd::when([m](const herd::down& d) { return d.ref == m; }, [](herd::down&&) { return true; }),
                            herd::after(0ms, [] { return false; }));
  if (!dead) herd::demonitor(m);
  return !dead;
}

// From a process: the pid of child `id` (no_pid if it is not running or absent).
inline herd::pid pid_of(herd::pid sup, const std::string& id) {
  for (const sup::child_info& c : sup::which_children(sup))
    if (c.id == id) return c.pid;
  return herd::no_pid;
}

// From a process: waits until child `id` runs under a pid other than `old`.
inline herd::pid wait_restart(herd::pid sup, const std::string& id, herd::pid old,
                              std::chrono::milliseconds limit = 5000ms) {
  herd::pid now = herd::no_pid;
  herd::test::eventually(
      [&] {
        now = pid_of(sup, id);
        return now.valid() && now != old;
      },
      limit);
  return now;
}

// From a process: ends p with `kill` and waits until it is gone.
inline void kill_and_wait(herd::pid p) {
  herd::monitor_ref m = herd::monitor(p);
  herd::exit(p, herd::exit_reason::kill());
  herd::receive(herd::when([m](const herd::down& d) { return d.ref == m; }, [](herd::down&&) {}));
}

inline std::chrono::milliseconds virtual_now() { return std::chrono::milliseconds(herd::rt::now_ms()); }

// Sends the logger to a scratch file for the test (logging is off otherwise).
class log_capture {
 public:
  log_capture() {
    char tmpl[] = "/tmp/herd-sup-log-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd >= 0) ::close(fd);
    path_ = tmpl;
    herd::set_log_file(path_);
    herd::set_logging(true);
  }
  ~log_capture() {
    herd::log_flush();
    herd::set_logging(false);
    herd::set_log_stderr();
    ::unlink(path_.c_str());
  }
  // From the test thread (not a worker): everything reported so far.
  std::string text() const {
    herd::log_flush();
    std::ifstream f(path_);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace sup_test
