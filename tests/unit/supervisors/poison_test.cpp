// A handler that throws on every message, fed faster than it can be
// restarted (a poison message stream): its supervisor restarts it up to its
// intensity, gives up, and the giving up escalates. A sibling outside the
// failing branch keeps its state and every message sent to it until the top
// gives up; each crash is reported with its exception; and nothing is left
// behind — no process, no message.
#include "sup_fixtures.hpp"

#include <herd/actors/server.hpp>

#include <catch2/catch.hpp>

#include <atomic>

using namespace sup_test;
using herd::test::run_node;

namespace poison_msgs {
struct poison {
  int n;
};
struct bump {};
struct total {};
}  // namespace poison_msgs

namespace {
using namespace poison_msgs;

struct fragile : herd::server<fragile> {
  using casts = herd::types<poison>;
  explicit fragile(std::atomic<int>* starts) { ++*starts; }
  void handle_cast(poison p) { throw std::runtime_error("poison " + std::to_string(p.n)); }
};

struct steady : herd::server<steady> {
  using calls = herd::types<total>;
  using casts = herd::types<bump>;
  int handle_call(total, const herd::from&) { return n; }
  void handle_cast(bump) { ++n; }
  int n = 0;
};

}  // namespace

TEST_CASE("a handler that throws on every message: restarts up to the intensity, the give-up escalates to the top, "
          "a sibling loses nothing meanwhile, and nothing is left",
          "[supervisor][intensity][poison]") {
  log_capture logs;
  const auto messages_before = herd::node::live_messages();
  std::atomic<int> starts{0};
  int poison_sent = 0, bumps = 0, bumps_before_call = -1, steady_total = -1, live_after = -1;
  bool steady_same = false;
  herd::exit_reason why;
  auto r = run_node(herd::test::opts(2), [&] {
    herd::trap_exit(true);
    auto top = sup::start_link(
        {.intensity = 1, .period = 60s, .name = "poison_top"},
        {sup::supervisor_spec("branch", {.intensity = 3, .period = 60s},
                              {{.id = "fragile",
                                .start = [&starts] { return herd::serve<fragile>(&starts); },
                                .registered_name = "fragile"}}),
         {.id = "steady", .start = [] { return herd::serve<steady>(); }, .registered_name = "steady"}});
    const herd::pid steady0 = herd::whereis("steady").value();
    auto feed = [&] {
      if (auto f = herd::whereis("fragile")) herd::cast(*f, poison{poison_sent++});
      herd::cast(steady0, bump{});
      ++bumps;
      herd::yield();
    };
    // Branch #1 gives up after its 4th crash; the top starts branch #2.
    while (starts < 5) feed();
    steady_same = herd::whereis("steady") == steady0;
    bumps_before_call = bumps;
    steady_total = herd::call<int>(steady0, total{});  // one sender's casts arrive in order
    // Branch #2 gives up too: a second restart of it within the period is one too many for the top.
    bool top_gone = false;
    while (!top_gone) {
      feed();
      herd::receive(herd::when([&](const herd::exit_msg& e) { return e.from == *top; },
                               [&](herd::exit_msg&& e) {
                                 why = e.reason;
                                 top_gone = true;
                               }),
                    herd::after(0ms));
    }
    herd::test::eventually([] { return herd::current_node_stats().live_processes == 1; });
    live_after = int(herd::current_node_stats().live_processes);
  });
  CHECK(r.is_normal());
  CHECK(starts == 8);  // two branches, each: a start and 3 restarts
  CHECK(why == herd::exit_reason::shutdown());
  CHECK(steady_same);
  CHECK(steady_total == bumps_before_call);
  CHECK(live_after == 1);  // only the root: the tree is gone, whole
  CHECK(herd::node::live_messages() == messages_before);
  std::string text = logs.text();
  INFO(text);
  CHECK(count_of(text, "exited: {error, std::runtime_error: poison ") == 8);
  CHECK(count_of(text, "restart intensity reached (more than 3 restart(s) in 60000 ms)") == 2);
  CHECK(count_of(text, "restart intensity reached (more than 1 restart(s) in 60000 ms)") == 1);
}
