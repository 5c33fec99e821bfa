// trace: a known message sequence up to its limit, the rate stop, the stop
// on exit, the timeout, and other requests answered while a trace runs.
#include "observer_fixture.hpp"

#include <atomic>

using namespace observer_test;
using namespace std::chrono_literals;

namespace {

// Takes pings forever (one at a time), so each one is a delivered message.
void pinged() {
  for (;;) herd::receive([](obs_msgs::ping) {});
}

live_node pinged_node() {
  return live_node(2, [](root_ctx& c) { c.pids.push_back(herd::spawn({.name = "pinged"}, pinged)); });
}

}  // namespace

TEST_CASE("trace reports the next N messages with their type, size and sender, then stops at its limit") {
  std::atomic<bool> go{false};
  live_node n(2, [&](root_ctx& c) {
    herd::pid target = herd::spawn(pinged);
    c.pids.push_back(target);
    // A sender that is a process, so events name it.
    c.pids.push_back(herd::spawn([target, &go] {
      while (!go) herd::sleep(1ms);  // polls the flag
      for (int i = 0; i < 5; ++i) herd::send(target, obs_msgs::ping{i});
      herd::receive([](obs_msgs::never) {});
    }));
  });
  client c(n.socket());
  const std::string target = n.ctx().pids[0].to_string();
  json first = c.ask(req("trace", {{"id", 3}, {"pid", target}, {"limit", 3}}));
  INFO(first.dump());
  REQUIRE(first["ok"] == true);
  CHECK(first["id"] == 3);
  CHECK(first["result"] == json({{"tracing", target}, {"limit", 3}}));
  go = true;
  for (int i = 0; i < 3; ++i) {
    json e = c.read_json();
    INFO(e.dump());
    CHECK(e["id"] == 3);
    CHECK(e["event"]["kind"] == "message");
    CHECK(e["event"]["type"] == "obs_msgs::ping");
    CHECK(e["event"]["bytes"] == 32 + sizeof(obs_msgs::ping));
    CHECK(e["event"]["from"] == n.ctx().pids[1].to_string());
  }
  json done = c.read_json();
  CHECK(done["done"] == json({{"events", 3}, {"why", "limit"}}));
  // The connection goes on, and the process is no longer traced.
  json again = c.ask(req("trace", {{"pid", target}, {"limit", 1}}));
  CHECK(again["ok"] == true);
  herd::send(n.ctx().pids[0], obs_msgs::ping{9});
  CHECK(c.read_json()["event"]["type"] == "obs_msgs::ping");
  CHECK(c.read_json()["done"]["why"] == "limit");
}

TEST_CASE("a trace stops with `rate` when more than 1,000 events arrive within a second") {
  live_node n = pinged_node();
  client c(n.socket());
  herd::pid target = n.ctx().pids[0];
  REQUIRE(c.ask(req("trace", {{"pid", target.to_string()}, {"limit", 10000}}))["ok"] == true);
  for (int i = 0; i < 1500; ++i) herd::send(target, obs_msgs::ping{i});
  int events = 0;
  json done;
  for (;;) {
    json l = c.read_json();
    if (l.contains("done")) {
      done = l["done"];
      break;
    }
    ++events;
  }
  CHECK(done["why"] == "rate");
  CHECK(done["events"] == events);
  CHECK(events == 1000);
}

TEST_CASE("a trace ends with `exited` and the reason when its process exits, and with `timeout`") {
  live_node n(2, [](root_ctx& c) {
    c.pids.push_back(herd::spawn(pinged));
    c.pids.push_back(herd::spawn(pinged));
  });
  client c(n.socket());
  const std::string a = n.ctx().pids[0].to_string(), b = n.ctx().pids[1].to_string();
  REQUIRE(c.ask(req("trace", {{"id", "a"}, {"pid", a}, {"limit", 50}}))["ok"] == true);
  REQUIRE(c.ask(req("trace", {{"id", "b"}, {"pid", b}, {"timeout_ms", 300}}))["ok"] == true);
  // Another request is answered while both run; the same pid cannot be traced twice.
  CHECK(c.ask(req("trace", {{"pid", a}}))["error"]["code"] == "failed");
  herd::exit(n.ctx().pids[0], herd::exit_reason::shutdown());
  json first = c.read_json();
  INFO(first.dump());
  // The exit signal itself is traced, then the end.
  CHECK(first["id"] == "a");
  CHECK(first["event"]["kind"] == "signal");
  CHECK(first["event"]["type"] == "exit");
  CHECK(first["event"]["reason"] == "shutdown");
  json done_a = c.read_json();
  CHECK(done_a["id"] == "a");
  CHECK(done_a["done"]["why"] == "exited");
  CHECK(done_a["done"]["events"] == 1);
  CHECK(done_a["done"]["reason"] == "shutdown");
  json done_b = c.read_json();
  CHECK(done_b["id"] == "b");
  CHECK(done_b["done"] == json({{"events", 0}, {"why", "timeout"}}));
  CHECK(c.ask(req("trace", {{"pid", a}}))["error"]["code"] == "noproc");
  CHECK(c.ask(req("trace", {{"pid", b}, {"limit", 10001}}))["error"]["code"] == "bad_request");
}

TEST_CASE("a trace whose client disconnects is detached (closed), so the process can be traced again") {
  live_node n = pinged_node();
  const std::string t = n.ctx().pids[0].to_string();
  {
    client c(n.socket());
    REQUIRE(c.ask(req("trace", {{"pid", t}}))["ok"] == true);
  }
  client c2(n.socket());
  CHECK(eventually([&] { return c2.ask(req("trace", {{"pid", t}, {"limit", 1}}))["ok"] == true; }));
}
