// What makes an observer row tell its process apart (observer_cli's bar):
// the initial call and kind recorded at spawn, the acceptors' names, and
// kill's wait for the exit.
// herd-unity: file scope (its checks name its types with their namespaces)
#include "observer_fixture.hpp"

#include <herd/net/listener.hpp>
#include <herd/supervisors/supervisor.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <set>

using namespace observer_test;
using namespace std::chrono_literals;
namespace sup = herd::supervisor;

namespace obs_labels {

void parked() {
  herd::receive([](obs_msgs::never) {});
}

herd::pid spawn_a_lambda_here() {
  return herd::spawn([] { parked(); });
}

struct get {};
struct tally : herd::server<tally> {
  using calls = herd::types<get>;
  int handle_call(const get&) { return 0; }
};

}  // namespace obs_labels

namespace {

// pid -> row, over every live process.
std::map<std::string, json> all_rows(client& c) {
  std::map<std::string, json> out;
  json reply = c.ask(req("processes", {{"limit", 100000}}));
  if (!reply.contains("result")) throw std::runtime_error(reply.dump());
  for (auto& r : reply["result"]["processes"]) out[r["pid"].get<std::string>()] = r;
  return out;
}

}  // namespace

TEST_CASE("processes and process name what each unnamed process runs and what kind it is") {
  std::atomic<uint16_t> port{0};
  live_node n(2, [&](root_ctx& c) {
    herd::pid lambda = obs_labels::spawn_a_lambda_here();
    herd::pid given = herd::spawn({.initial_call = "obs_labels::given"}, obs_labels::parked);
    herd::pid server = herd::start_server<obs_labels::tally>();
    auto top = sup::start_link({.name = "obs_label_sup"}, {{.id = "w", .start = [] { obs_labels::parked(); }}});
    REQUIRE_NOTHROW(top.value());
    herd::unlink(*top);
    auto l = herd::net::start_listener("obs_lbl", {.bind = "127.0.0.1", .port = 0, .acceptors = 2},
                                       [](herd::net::tcp_socket s) {
                                         while (auto b = s.recv()) (void)s.send(b->view());
                                       });
    REQUIRE_NOTHROW(l.value());
    port = l->port;
    c.pids = {lambda, given, server, *top, sup::which_children(*top)[0].pid};
    c.on_stop = [top = *top] {
      (void)herd::net::stop_listener("obs_lbl");
      (void)sup::stop(top);
    };
  });
  client c(n.socket());
  int conn = connect_loopback(port);
  REQUIRE(conn >= 0);
  auto& p = n.ctx().pids;
  std::map<std::string, json> rows;
  bool connected = eventually([&] {
    rows = all_rows(c);
    for (auto& [id, r] : rows)
      if (r["kind"] == "connection") return true;
    return false;
  });
  INFO(json(rows).dump().substr(0, 4000));
  REQUIRE(connected);
  auto row = [&](herd::pid id) {
    INFO(id.to_string());
    REQUIRE(rows.count(id.to_string()));
    return rows[id.to_string()];
  };
  json lambda = row(p[0]);
  INFO(lambda.dump());
  CHECK(lambda["kind"] == "worker");
  CHECK(lambda["name"].is_null());
  CHECK(lambda["initial_call"].get<std::string>().find("spawn_a_lambda_here()::<lambda()>") != std::string::npos);
  CHECK(row(p[1])["initial_call"] == "obs_labels::given");
  CHECK(row(p[2])["kind"] == "server");
  CHECK(row(p[2])["initial_call"] == "obs_labels::tally");
  CHECK(row(p[3])["kind"] == "supervisor");
  CHECK(row(p[3])["initial_call"] == "herd::supervisor");
  // A supervisor's worker: the start function's type, not the supervisor's wrapper.
  CHECK(row(p[4])["kind"] == "worker");
  CHECK(row(p[4])["initial_call"].get<std::string>().find("<lambda()>") != std::string::npos);

  // The listener's tree: acceptors named as Ranch's are shown, conns_sup,
  // and the connection.
  std::map<std::string, int> kinds;
  std::set<std::string> acceptor_names;
  for (auto& [id, r] : rows) {
    kinds[r["kind"]]++;
    if (r["kind"] == "acceptor") {
      acceptor_names.insert(r["name"].get<std::string>());
      CHECK(r["initial_call"] == "herd::net acceptor");
    }
    if (r["kind"] == "connection") CHECK(r["initial_call"] == "herd::net connection");
  }
  CHECK(acceptor_names == std::set<std::string>{"obs_lbl_acceptor_0", "obs_lbl_acceptor_1"});
  CHECK(kinds["connection"] == 1);
  // the listener's own supervisor, acceptors_sup, conns_sup, and obs_label_sup
  CHECK(kinds["supervisor"] == 4);

  // The tree names the registered acceptors under acceptors_sup.
  std::set<std::string> tree_names;
  std::function<void(const json&)> walk = [&](const json& node) {
    if (node.contains("id") && node["id"].is_string() && node["id"].get<std::string>().rfind("acceptor_", 0) == 0)
      tree_names.insert(node.value("name", std::string("(none)")));
    if (node.contains("children"))
      for (auto& ch : node["children"]) walk(ch);
  };
  // (A supervisor that does not answer within 100 ms shows as busy, without
  // children: on a loaded machine, ask again.)
  json tree;
  CHECK(eventually([&] {
    tree_names.clear();
    tree = c.ask(req("tree"));
    for (auto& root : tree["result"]["roots"]) walk(root);
    return tree_names == acceptor_names;
  }));
  INFO(tree.dump());
  CHECK(tree_names == acceptor_names);

  // The kind filter, and `process` says the same.
  json acc = c.ask(req("processes", {{"kind", "acceptor"}}))["result"];
  CHECK(acc["matched"] == 2);
  CHECK(c.ask(req("processes", {{"kind", "gizmo"}}))["error"]["code"] == "bad_request");
  json d = c.ask(req("process", {{"pid", p[2].to_string()}}))["result"];
  CHECK(d["kind"] == "server");
  CHECK(d["initial_call"] == "obs_labels::tally");
  ::close(conn);
}

TEST_CASE("kill waits for the exit and reports its reason, or says the signal was only sent") {
  live_node n(2, [&](root_ctx& c) {
    c.pids.push_back(herd::spawn(obs_labels::parked));
    c.pids.push_back(herd::spawn([] {
      herd::trap_exit(true);  // takes `shutdown` as a message and carries on
      for (;;) herd::receive([](const herd::exit_msg&) {});
    }));
    c.pids.push_back(herd::spawn(obs_labels::parked));
    c.on_stop = [pid = c.pids[1]] { herd::exit(pid, herd::exit_reason::kill()); };
  });
  client c(n.socket());
  auto& p = n.ctx().pids;
  json r = c.ask(req("kill", {{"pid", p[0].to_string()}}))["result"];
  INFO(r.dump());
  CHECK(r["outcome"] == "exited");
  CHECK(r["exit_reason"] == "killed");
  // The reply came after the exit: the pid is gone at once, no polling.
  CHECK(c.ask(req("process", {{"pid", p[0].to_string()}}))["error"]["code"] == "noproc");

  json e = c.ask(req("kill", {{"pid", p[2].to_string()}, {"reason", "too many widgets"}}))["result"];
  CHECK(e["outcome"] == "exited");
  CHECK(e["exit_reason"].get<std::string>().find("too many widgets") != std::string::npos);

  json s = c.ask(req("kill", {{"pid", p[1].to_string()}, {"reason", "shutdown"}, {"timeout_ms", 200}}))["result"];
  INFO(s.dump());
  CHECK(s["outcome"] == "sent");
  CHECK(!s.contains("exit_reason"));
  CHECK(s["waited_ms"].get<int64_t>() >= 200);
  CHECK(c.ask(req("process", {{"pid", p[1].to_string()}}))["ok"] == true);
  CHECK(c.ask(req("kill", {{"pid", p[1].to_string()}, {"timeout_ms", -1}}))["error"]["code"] == "bad_request");
}

TEST_CASE("processes --sort reductions_rate gives reductions over the interval since the last such request") {
  live_node n(2, [](root_ctx& c) {
    // A large total, then idle: its rate must be 0, whatever its total.
    c.pids.push_back(herd::spawn({.name = "rate_idle"}, [] {
      for (int i = 0; i < 20000; ++i) herd::send(herd::self(), obs_msgs::ping{i});
      for (int i = 0; i < 20000; ++i) herd::receive([](obs_msgs::ping) {});
      obs_labels::parked();
    }));
    // Busy for as long as the test runs.
    c.pids.push_back(herd::spawn([] {
      for (;;) herd::receive([](obs_msgs::never) {}, herd::after(1ms, [] {}));
    }));
  });
  client c(n.socket());
  auto& p = n.ctx().pids;
  const std::string idle = p[0].to_string(), busy = p[1].to_string();
  auto ask = [&] { return c.ask(req("processes", {{"sort", "reductions_rate"}, {"limit", 100}}))["result"]; };
  auto find = [](const json& res, const std::string& pid) {
    for (auto& r : res["processes"])
      if (r["pid"] == pid) return r;
    return json();
  };
  // Until the idle one is done with its own messages (a scan: nothing that wakes it).
  REQUIRE(eventually([&] {
    json r = c.ask(req("processes", {{"name", "rate_idle"}}))["result"]["processes"][0];
    return r["status"] == "waiting" && r["mailbox"] == 0;
  }));
  json first = ask();
  INFO(first.dump().substr(0, 1500));
  // The node's first sample (no baseline yet): no rate, ordered by the total.
  CHECK(first["interval_ms"] == 0);
  CHECK(find(first, idle)["reductions_per_s"].is_null());
  CHECK(find(first, idle)["reductions"].get<int64_t>() > find(first, busy)["reductions"].get<int64_t>());
  std::this_thread::sleep_for(300ms);  // an interval to measure, not synchronisation
  json second = ask();
  INFO(second.dump().substr(0, 1500));
  const double interval = second["interval_ms"].get<double>();
  REQUIRE(interval > 0);
  for (const std::string& pid : {idle, busy}) {
    json a = find(first, pid), b = find(second, pid);
    REQUIRE(b.is_object());
    const double delta = double(b["reductions"].get<int64_t>() - a["reductions"].get<int64_t>());
    // rate = delta / interval (the row's reductions are read in the same pass as the rate's)
    CHECK(b["reductions_per_s"].get<double>() == Approx(delta * 1000.0 / interval));
  }
  CHECK(find(second, idle)["reductions_per_s"] == 0.0);
  CHECK(find(second, busy)["reductions_per_s"].get<double>() > 0);
  // Sorted by the rate: the busy one before the idle one with the larger total.
  std::vector<std::string> order;
  for (auto& r : second["processes"]) order.push_back(r["pid"]);
  CHECK(std::find(order.begin(), order.end(), busy) < std::find(order.begin(), order.end(), idle));
  CHECK(c.ask(req("processes", {{"sort", "rate"}}))["error"]["code"] == "bad_request");
}

TEST_CASE("memory counts a process's monitors, its stack's pages and a hibernated continuation") {
  live_node n(2, [](root_ctx& c) {
    herd::pid popular = herd::spawn({.name = "popular"}, obs_labels::parked);
    // 2,000 monitors on it (a connection in 2,000 rooms).
    for (int i = 0; i < 2000; ++i) herd::monitor(popular);
    herd::pid sleeper = herd::spawn({.name = "sleeper"}, [] {
      std::array<char, 6000> big{};
      big[0] = 1;
      return herd::hibernated([big] {
        if (big[0]) obs_labels::parked();
      });
    });
    c.pids = {popular, sleeper};
  });
  client c(n.socket());
  auto& p = n.ctx().pids;
  json row;
  // Published by the process before it parks again, after taking the monitors in.
  REQUIRE(eventually([&] {
    row = c.ask(req("processes", {{"name", "popular"}}))["result"]["processes"][0];
    return row["memory"].get<int64_t>() > 2000 * 16;
  }));
  json d = c.ask(req("process", {{"pid", p[0].to_string()}}))["result"];
  INFO(d.dump().substr(0, 2000));
  REQUIRE(d["relations"] == "ok");
  CHECK(d["monitored_by"].size() == 2000);
  const json& parts = d["memory_parts"];
  CHECK(parts["relations"].get<int64_t>() >= 2000 * 16);
  CHECK(parts["stack"].get<int64_t>() % 4096 == 0);
  CHECK(parts["stack"].get<int64_t>() >= d["stack"]["touched"].get<int64_t>());
  int64_t sum = 0;
  for (auto& [k, v] : parts.items()) sum += v.get<int64_t>();
  CHECK(d["memory"] == sum);

  json s = c.ask(req("process", {{"pid", p[1].to_string()}}))["result"];
  INFO(s.dump());
  CHECK(s["hibernated"] == true);
  CHECK(s["memory_parts"]["continuation"].get<int64_t>() >= 6000);
  CHECK(s["memory_parts"]["stack"] == 0);
}
