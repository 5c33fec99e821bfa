// The messages and helpers the links, exit-signal and unwinding tests share
// (links_test.cpp, exit_signals_test.cpp, exit_unwind_test.cpp). A process's
// exit reason is observed with a monitor from the root (monitors have their
// own tests in monitor_test.cpp). Processes under test are never linked to
// the root unless the test says so.
#pragma once
#include <herd/actors.hpp>

#include <catch2/catch.hpp>

#include "support/node_fixture.hpp"
#include "support/scale.hpp"
#include "support/subprocess.hpp"

#include <unistd.h>

#include <atomic>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using herd::test::dtor_probe;
using herd::test::run_node;

namespace links_test_msgs {
struct stop {};
struct go {};
struct ping { herd::pid from; };
struct pong {};
struct fail { std::string what; };
struct ready { herd::pid who; };
struct chain_member { int i; herd::pid who; };
struct linked {};
struct alive {};
struct got_exit { herd::pid from; herd::exit_reason reason; };
struct nothing_came {};
struct from_dtor { int n; };
struct seq { int n; };
struct link_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct other_error : std::logic_error {
  using std::logic_error::logic_error;
};

inline herd::node_options opts(unsigned workers) { return herd::test::opts(workers); }

// A process's usual life in these tests: answers ping, throws link_error on
// `fail`, returns on `stop`.
inline void serve() {
  for (bool done = false; !done;) {
    herd::receive([&](stop) { done = true; }, [](ping p) { herd::send(p.from, pong{}); },
                  [](fail f) { throw link_error(f.what); });
  }
}

// From a process: the reason carried by the `down` for ref, or nullopt when
// none came within limit.
inline std::optional<herd::exit_reason> down_reason(herd::monitor_ref ref, std::chrono::milliseconds limit = 5s) {
  return herd::receive(
      herd::when([ref](const herd::down& d) { return d.ref == ref; },
                 [](herd::down&& d) { return std::optional<herd::exit_reason>(std::move(d.reason)); }),
      herd::after(limit, [] { return std::optional<herd::exit_reason>(); }));
}

// From a process: true if p answers a ping.
inline bool answers(herd::pid p, std::chrono::milliseconds limit = 2s) {
  herd::send(p, ping{herd::self()});
  return herd::receive([](pong) { return true; }, herd::after(limit, [] { return false; }));
}

// From a process: the next exit_msg, or nullopt.
inline std::optional<herd::exit_msg> next_exit_msg(std::chrono::milliseconds limit) {
  return herd::receive([](herd::exit_msg&& e) { return std::optional<herd::exit_msg>(std::move(e)); },
                       herd::after(limit, [] { return std::optional<herd::exit_msg>(); }));
}

inline herd::exit_reason link_err(const std::string& what) {
  return herd::exit_reason::error("links_test_msgs::link_error", what);
}

// Sends from_dtor{n} to `to` when destroyed.
struct notify_on_exit {
  herd::pid to;
  int n;
  ~notify_on_exit() { herd::send(to, from_dtor{n}); }
};

}  // namespace links_test_msgs
