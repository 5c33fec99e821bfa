// tree lists a listener's connections under its conns_sup: pid, the peer
// accept4 gave, and the kernel's view of the socket.
#include "observer_fixture.hpp"

#include <herd/net/listener.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <functional>
#include <set>

using namespace observer_test;
using namespace std::chrono_literals;

namespace {

json find_child(const json& node, const std::string& id) {
  if (node.contains("id") && node["id"] == id) return node;
  if (node.contains("children"))
    for (auto& ch : node["children"])
      if (json f = find_child(ch, id); !f.is_null()) return f;
  return nullptr;
}

}  // namespace

TEST_CASE("tree lists each connection under its conns_sup with its peer address and socket state") {
  std::atomic<uint16_t> port{0};
  live_node n(2, [&](root_ctx& c) {
    // The handler never reads: what a client sends stays in the receive queue.
    auto l = herd::net::start_listener("obs_tree_conns", {.bind = "127.0.0.1", .port = 0, .acceptors = 1},
                                       [](herd::net::tcp_socket) { herd::receive([](obs_msgs::never) {}); });
    REQUIRE_NOTHROW(l.value());
    port = l->port;
    c.on_stop = [] { (void)herd::net::stop_listener("obs_tree_conns"); };
  });
  client c(n.socket());
  std::set<std::string> clients;
  std::vector<int> fds;
  for (int i = 0; i < 3; ++i) {
    std::string local;
    int fd = connect_loopback(port, &local);
    REQUIRE(fd >= 0);
    fds.push_back(fd);
    clients.insert(local);
  }
  REQUIRE(::send(fds[0], "hello", 5, MSG_NOSIGNAL) == 5);

  json conns_sup;
  std::set<std::string> peers;
  bool listed = eventually([&] {
    json tree = c.ask(req("tree"));
    conns_sup = nullptr;
    for (auto& root : tree["result"]["roots"])
      if (root["name"] == "obs_tree_conns") conns_sup = find_child(root, "conns_sup");
    if (conns_sup.is_null() || !conns_sup.contains("connections")) return false;
    peers.clear();
    for (auto& r : conns_sup["connections"]) peers.insert(r["peer"].get<std::string>());
    for (auto& r : conns_sup["connections"])
      if (r["tcp_state"] != "established") return false;
    return peers == clients;
  });
  INFO(conns_sup.dump());
  REQUIRE(listed);
  CHECK(conns_sup["connections_total"] == 3);
  CHECK(conns_sup["truncated"] == false);
  CHECK(conns_sup["connections"].size() == 3);

  // Each row's pid is a live connection process; the first client's 5
  // unread bytes show in its row's recv_queue.
  std::string first_local;
  {
    sockaddr_in me{};
    socklen_t len = sizeof me;
    ::getsockname(fds[0], reinterpret_cast<sockaddr*>(&me), &len);
    first_local = "127.0.0.1:" + std::to_string(ntohs(me.sin_port));
  }
  CHECK(eventually([&] {
    json tree = c.ask(req("tree"));
    for (auto& root : tree["result"]["roots"])
      if (root["name"] == "obs_tree_conns") conns_sup = find_child(root, "conns_sup");
    if (conns_sup.is_null() || !conns_sup.contains("connections")) return false;
    for (auto& r : conns_sup["connections"])
      if (r["peer"] == first_local) return r["recv_queue"] == 5 && r["send_queue"] == 0;
    return false;
  }));
  for (auto& r : conns_sup["connections"]) {
    json d = c.ask(req("process", {{"pid", r["pid"]}}));
    INFO(d.dump());
    CHECK(d["result"]["kind"] == "connection");
  }
  for (int fd : fds) ::close(fd);
}
