// load and modules: a fixture module loaded through the observer, the
// versions it lists with their actors, and `process` naming an actor's module.
#include "observer_fixture.hpp"

#include "greeter_api.hpp"
#include "module_sandbox.hpp"

#include <herd/tables/table.hpp>

using namespace observer_test;
using namespace std::chrono_literals;

TEST_CASE("load loads a module, modules lists current and old versions with their actors, process names the module") {
  module_fixture::sandbox s;  // a private module directory (set_module_dir)
  std::string v1 = s.deploy("greeter_v1", "greeter_v1.so");
  std::string v2 = s.deploy("greeter_v2", "greeter_v2.so");
  live_node n(2, [](root_ctx&) {});
  client c(n.socket());
  json r = c.ask(req("load", {{"path", v1}}), 30s);
  INFO(r.dump());
  REQUIRE(r["ok"] == true);
  CHECK(r["result"] == json({{"name", "greeter"}, {"version", "1"}}));

  // An actor that holds a v1 handler until told to stop.
  herd::pid holder = herd::spawn([] {
    auto h = herd::modules::create<module_fixture::greeter>("greeter");
    herd::receive([](obs_msgs::stop_root) {});
  });
  json m;
  REQUIRE(eventually([&] {
    m = c.ask(req("modules"));
    return m["result"]["modules"].size() == 1 && m["result"]["modules"][0]["current"]["actors"] == 1;
  }));
  INFO(m.dump());
  CHECK(m["result"]["modules"][0]["name"] == "greeter");
  CHECK(m["result"]["modules"][0]["current"]["version"] == "1");
  CHECK(m["result"]["modules"][0]["current"]["path"] == v1);
  CHECK(m["result"]["modules"][0]["old"].is_null());
  json p = c.ask(req("process", {{"pid", holder.to_string()}}));
  CHECK(p["result"]["module"] == json({{"name", "greeter"}, {"version", "1"}}));

  REQUIRE(c.ask(req("load", {{"path", v2}}), 30s)["result"]["version"] == "2");
  m = c.ask(req("modules"));
  CHECK(m["result"]["modules"][0]["current"]["version"] == "2");
  CHECK(m["result"]["modules"][0]["current"]["actors"] == 0);
  CHECK(m["result"]["modules"][0]["old"]["version"] == "1");
  CHECK(m["result"]["modules"][0]["old"]["actors"] == 1);

  json bad = c.ask(req("load", {{"path", s.dir() + "/missing.so"}}), 30s);
  CHECK(bad["error"]["code"] == "failed");
  CHECK(!bad["error"]["message"].get<std::string>().empty());
  herd::send(holder, obs_msgs::stop_root{});
  CHECK(eventually([&] { return c.ask(req("process", {{"pid", holder.to_string()}}))["ok"] == false; }));
}

TEST_CASE("load with purge kill kills the processes still on the version before the current one - soft refuses") {
  module_fixture::sandbox s;
  std::string v1 = s.deploy("greeter_v1", "greeter_v1.so");
  std::string v2 = s.deploy("greeter_v2", "greeter_v2.so");
  std::string v3 = s.deploy("greeter_v3", "greeter_v3.so");
  live_node n(2, [](root_ctx&) {});
  client c(n.socket());
  REQUIRE(c.ask(req("load", {{"path", v1}}), 30s)["ok"] == true);
  // Holds a v1 handler and never switches it: v1 stays in use.
  herd::pid holder = herd::spawn([] {
    auto h = herd::modules::create<module_fixture::greeter>("greeter");
    herd::receive([](obs_msgs::stop_root) {});
  });
  REQUIRE(eventually([&] { return module_fixture::info("greeter", "1").actors.size() == 1; }));
  REQUIRE(c.ask(req("load", {{"path", v2}}), 30s)["ok"] == true);

  json soft = c.ask(req("load", {{"path", v3}}), 30s);
  INFO(soft.dump());
  CHECK(soft["error"]["code"] == "failed");
  CHECK(soft["error"]["message"].get<std::string>().find("still in use") != std::string::npos);
  json bad = c.ask(req("load", {{"path", v3}, {"purge", "hard"}}), 30s);
  CHECK(bad["error"]["code"] == "bad_request");
  CHECK(c.ask(req("process", {{"pid", holder.to_string()}}))["ok"] == true);

  json killed = c.ask(req("load", {{"path", v3}, {"purge", "kill"}, {"purge_timeout_ms", 20000}}), 60s);
  INFO(killed.dump());
  CHECK(killed["ok"] == true);
  CHECK(killed["result"] == json({{"name", "greeter"}, {"version", "3"}}));
  CHECK(eventually([&] { return c.ask(req("process", {{"pid", holder.to_string()}}))["ok"] == false; }));
  // v1 is unloaded once the killed holder's handler is gone, after its exit.
  CHECK(eventually([] { return module_fixture::info("greeter", "1").state.empty(); }));
}

TEST_CASE("tables lists every table with its type, protection, owner, heir, size and memory, and drops it with its owner") {
  live_node n(2, [](root_ctx&) {});
  client c(n.socket());
  herd::pid owner = herd::spawn([] {
    auto t = *herd::table<uint64_t, std::string>::create({.type = herd::table_type::ordered_set,
                                                          .access = herd::table_access::public_,
                                                          .name = "observer_sessions"});
    for (uint64_t i = 0; i < 100; ++i) t.insert(i, std::string(100, 'x'));
    herd::receive([](obs_msgs::stop_root) {});
  });
  json m, row;
  REQUIRE(eventually([&] {
    m = c.ask(req("tables"));
    for (auto& t : m["result"]["tables"])
      if (t["name"] == "observer_sessions" && t["size"] == 100) row = t;
    return !row.is_null();
  }));
  INFO(m.dump());
  CHECK(row["type"] == "ordered_set");
  CHECK(row["protection"] == "public");
  CHECK(row["owner"] == owner.to_string());
  CHECK(row["heir"].is_null());
  CHECK(row["memory"].get<std::size_t>() > 100 * 100);
  CHECK(row["key_type"] == "unsigned long");
  herd::send(owner, obs_msgs::stop_root{});
  CHECK(eventually([&] {
    json now = c.ask(req("tables"));  // held: a range over a temporary's member outlives it
    for (auto& t : now["result"]["tables"])
      if (t["name"] == "observer_sessions") return false;
    return true;
  }));
}
