// How a supervised actor dies in C++: its stack is unwound (destructors run),
// swallowing the exit does not save it, and what its destructors do while it
// is being killed (send, call) cannot take the node down.
#include "sup_fixtures.hpp"

#include <catch2/catch.hpp>

using namespace sup_test;
using herd::test::dtor_probe;
using herd::test::opts;
using herd::test::run_node;

namespace {

struct bye {
  int n;
};
struct question {};

}  // namespace

TEST_CASE("a child with catch (...) {} around its receive is still killed by its supervisor and its destructors run",
          "[supervisor][dying]") {
  unsigned workers = HERD_WORKERS();
  std::atomic<int> dtors{0};
  std::atomic<int> swallowed{0};
  bool dead = false;
  auto r = run_node(opts(workers), [&] {
    auto s = sup::start_link({}, {{.id = "swallower",
                                   .start = [&] {
                                     dtor_probe outer(dtors);
                                     try {
                                       dtor_probe inner(dtors);
                                       herd::receive([](finish) {});
                                     } catch (...) {
                                       ++swallowed;  // the exit is swallowed ...
                                     }
                                     herd::receive([](finish) {});  // ... and thrown again here
                                   },
                                   .shutdown = 1000ms}});
    herd::pid c = pid_of(*s, "swallower");
    (void)sup::terminate_child(*s, "swallower");
    dead = !alive(c);
    (void)sup::stop(*s);
  });
  CHECK(r.is_normal());
  CHECK(dead);
  CHECK(swallowed == 1);
  CHECK(dtors == 2);
}

TEST_CASE("a destructor that sends or calls while its actor is killed does not end the node", "[supervisor][dying]") {
  unsigned workers = HERD_WORKERS();
  int got_bye = 0;
  std::atomic<double> call_ms{-1};
  bool server_alive = false;
  auto r = run_node(opts(workers), [&] {
    herd::pid me = herd::self();
    herd::pid server = herd::spawn([] {
      for (;;) herd::receive([](herd::call_request<question>&& c) { herd::reply(c.from, 42); });
    });
    struct last_words {
      herd::pid to, server;
      std::atomic<double>* call_ms;
      ~last_words() {
        herd::send(to, bye{1});
        // Reached while the exit unwinds the stack: the call cannot wait for
        // its answer. It returns at once (a call_error, or a default value).
        auto t0 = herd::test::clk::now();
        try {
          (void)herd::call<int>(server, question{}, 5000ms);
        } catch (const herd::call_error&) {
        }
        *call_ms = herd::test::ms_since(t0);
        herd::send(to, bye{2});
      }
    };
    auto s = sup::start_link({}, {{.id = "w",
                                   .start = [me, server, &call_ms] {
                                     last_words lw{me, server, &call_ms};
                                     worker();
                                   },
                                   .shutdown = sup::brutal_kill}});
    (void)sup::terminate_child(*s, "w");
    for (int i = 0; i < 2; ++i) herd::receive([&](bye b) { got_bye += b.n; });
    server_alive = alive(server);
    (void)sup::stop(*s);
    herd::exit(server, herd::exit_reason::kill());
  });
  CHECK(r.is_normal());
  CHECK(got_bye == 3);
  CHECK(call_ms >= 0);
  CHECK(call_ms < 1000);  // did not wait for its 5 s timeout
  CHECK(server_alive);
}

TEST_CASE("a supervisor's crash report names an exception thrown by its child", "[supervisor][dying]") {
  log_capture logs;
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    auto s = sup::start_link({}, {{.id = "thrower", .start = [] {
                                     herd::receive([](crash) {});
                                     throw std::out_of_range("index 7");
                                   }}});
    herd::pid c = pid_of(*s, "thrower");
    herd::send(c, crash{});
    wait_restart(*s, "thrower", c);
    (void)sup::stop(*s);
  });
  CHECK(r.is_normal());
  std::string text = logs.text();
  INFO(text);
  CHECK(count_of(text, "exited: {error, std::out_of_range: index 7}; restarted as <") == 1);
}
