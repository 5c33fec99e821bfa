// The listener: accepting and echoing, errors for bad options, info,
// stopping, and an echo at a few thousand connections checking every byte.
#include "net_fixture.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>

#include <atomic>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace net_test;
using herd::net::active;
using herd::net::errc;
using herd::net::tcp_closed;
using herd::net::tcp_data;
using herd::net::tcp_error;
using herd::net::tcp_socket;

namespace net_listener_test {

// The echo handler, in the style the examples use: active once, and
// hibernating between messages so an idle connection holds no stack.
herd::hibernation echo_step(tcp_socket s) {
  return herd::hibernated([s = std::move(s)]() mutable -> herd::hibernation {
    bool open = true;
    herd::receive(
        [&](tcp_data& d) {
          if (!s.send(d.data.view()) || !s.set_active(active::once())) open = false;
        },
        [&](const tcp_closed&) { open = false; }, [&](const tcp_error&) { open = false; },
        [&](const herd::net::listener_draining&) { open = false; });
    if (!open) herd::exit(herd::exit_reason::normal());
    return echo_step(std::move(s));
  });
}

void echo_handler(tcp_socket s) {
  if (!s.set_active(active::once())) return;
  herd::hibernate([s = std::move(s)]() mutable { return echo_step(std::move(s)); });
}

}  // namespace net_listener_test
using namespace net_listener_test;

TEST_CASE("a listener accepts connections and echoes", "[net][listener]") {
  std::atomic<int> echoed{0};
  uint64_t accepts = 0;
  herd::test::run_node(node_opts(2), [&] {
    auto l = herd::net::start_listener("echo_basic", {.bind = "127.0.0.1"}, echo_handler);
    REQUIRE(l);
    CHECK(l->port != 0);
    uint16_t port = l->port;
    std::thread clients([&] {
      for (int i = 0; i < 20; ++i) {
        raw_client c(port);
        std::string msg = "hello " + std::to_string(i);
        c.send_all(msg);
        if (c.recv_n(msg.size()) == msg) ++echoed;
      }
    });
    clients.join();
    accepts = herd::net::info("echo_basic")->accepts;
    REQUIRE(herd::net::stop_listener("echo_basic"));
    CHECK_FALSE(herd::net::info("echo_basic"));
  });
  CHECK(echoed == 20);
  CHECK(accepts == 20);
}

TEST_CASE("bad listener options give clear errors", "[net][listener]") {
  std::vector<std::pair<errc, std::string>> got;
  herd::test::run_node(node_opts(2), [&] {
    raw_listener taken;
    auto h = [](tcp_socket) {};
    auto add = [&](herd::net::result<herd::net::listener_info> r) {
      if (r) {
        got.emplace_back(errc::system, "unexpectedly started");
        (void)herd::net::stop_listener(r->name);
      } else {
        got.emplace_back(r.code(), r.error().message());
      }
    };
    add(herd::net::start_listener("in_use", {.bind = "127.0.0.1", .port = taken.port}, h));
    add(herd::net::start_listener("bad_ip", {.bind = "999.1.1.1"}, h));
    add(herd::net::start_listener("not_local", {.bind = "192.0.2.1"}, h));
    add(herd::net::start_listener("no_acceptors", {.bind = "127.0.0.1", .acceptors = 0}, h));
    auto first = herd::net::start_listener("twice", {.bind = "127.0.0.1"}, h);
    REQUIRE(first);
    add(herd::net::start_listener("twice", {.bind = "127.0.0.1"}, h));
    REQUIRE(herd::net::stop_listener("twice"));
    got.emplace_back(herd::net::stop_listener("twice").code(), "");
  });
  REQUIRE(got.size() == 6);
  CHECK(got[0].first == errc::in_use);
  CHECK(got[0].second.find("Address already in use") != std::string::npos);
  CHECK(got[1].first == errc::bad_address);
  CHECK(got[1].second.find("999.1.1.1") != std::string::npos);
  CHECK(got[2].first == errc::bad_address);
  CHECK(got[3].first == errc::bad_options);
  CHECK(got[4].first == errc::in_use);
  CHECK(got[5].first == errc::not_found);
}

TEST_CASE("stop_listener ends every connection and frees the port", "[net][listener]") {
  bool eof = false, rebound = false;
  herd::test::run_node(node_opts(2), [&] {
    auto l = herd::net::start_listener("stopper", {.bind = "127.0.0.1"}, [](tcp_socket s) {
      (void)s.recv();  // waits until stopped
    });
    REQUIRE(l);
    raw_client c(l->port);
    REQUIRE(herd::test::eventually([] { return herd::net::info("stopper")->connections == 1; }));
    REQUIRE(herd::net::stop_listener("stopper"));
    eof = c.wait_eof(5000);
    auto again = herd::net::start_listener("stopper2", {.bind = "127.0.0.1", .port = l->port}, [](tcp_socket) {});
    rebound = again.ok();
    if (again) (void)herd::net::stop_listener("stopper2");
  });
  CHECK(eof);
  CHECK(rebound);
}

TEST_CASE("an echo at a few thousand connections returns every byte", "[net][listener][load]") {
  const std::size_t n = herd::test::scaled(3000, 400);
  std::size_t good = 0, bad = 0;
  herd::test::run_node(node_opts(2), [&] {
    auto l = herd::net::start_listener("echo_many", {.bind = "127.0.0.1", .max_connections = n + 10}, echo_handler);
    REQUIRE(l);
    uint16_t port = l->port;
    std::thread clients([&] {
      std::vector<raw_client> cs(n);
      std::vector<std::string> want(n), got(n);
      for (std::size_t i = 0; i < n; ++i) {
        if (!cs[i].connect(port)) return;
        want[i] = "conn " + std::to_string(i) + " ";
        while (want[i].size() < 200) want[i] += char('a' + (i + want[i].size()) % 26);
      }
      for (std::size_t i = 0; i < n; ++i) cs[i].send_all(want[i]);
      std::vector<pollfd> pf(n);
      auto t0 = std::chrono::steady_clock::now();
      std::size_t done = 0;
      while (done < n && std::chrono::steady_clock::now() - t0 < 30s) {
        for (std::size_t i = 0; i < n; ++i) pf[i] = {got[i].size() < want[i].size() ? cs[i].fd : -1, POLLIN, 0};
        if (::poll(pf.data(), n, 1000) <= 0) continue;
        for (std::size_t i = 0; i < n; ++i) {
          if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
          char buf[512];
          ssize_t r = ::recv(cs[i].fd, buf, sizeof buf, 0);
          if (r <= 0) {
            got[i] += "<eof>";
            ++done;
            continue;
          }
          got[i].append(buf, static_cast<std::size_t>(r));
          if (got[i].size() >= want[i].size()) ++done;
        }
      }
      for (std::size_t i = 0; i < n; ++i) (got[i] == want[i] ? good : bad)++;
    });
    clients.join();
    REQUIRE(herd::net::stop_listener("echo_many"));
  });
  CHECK(good == n);
  CHECK(bad == 0);
}

TEST_CASE("connections_of lists up to max of a listener's connections with their peers and counts them all", "[net][listener]") {
  std::size_t total = 0, rows = 0, known_peers = 0, established = 0, in_queue = 0;
  bool busy_answer = true;
  herd::test::run_node(node_opts(2), [&] {
    // The handler says hi and never reads: what a client sends stays queued.
    auto l = herd::net::start_listener("listed", {.bind = "127.0.0.1"}, [](tcp_socket s) {
      if (s.send("hi")) herd::receive([](const tcp_closed&) {});
    });
    REQUIRE(l);
    std::vector<raw_client> cs;
    std::set<std::string> mine;
    for (int i = 0; i < 4; ++i) {
      cs.emplace_back(l->port);
      REQUIRE(cs.back().recv_n(2, 5000) == "hi");
      sockaddr_in me{};
      socklen_t len = sizeof me;
      ::getsockname(cs.back().fd, reinterpret_cast<sockaddr*>(&me), &len);
      mine.insert("127.0.0.1:" + std::to_string(ntohs(me.sin_port)));
    }
    for (auto& c : cs) REQUIRE(c.send_all("abc"));
    herd::pid cs_pid = herd::net::info("listed")->conns_sup;
    busy_answer = herd::net::connections_of(herd::pid{}, 2, std::chrono::milliseconds(100)).code() ==
                  herd::net::errc::not_found;
    std::optional<herd::net::connections_listing> got;
    // (the 3 bytes reach each socket's receive queue on the kernel's time)
    herd::test::eventually([&] {
      auto listed = herd::net::connections_of(cs_pid, 2, std::chrono::seconds(5));
      if (!listed) return false;
      got = std::move(*listed);
      for (auto& r : got->rows)
        if (r.recv_queue != 3) return false;
      return true;
    }, std::chrono::seconds(5));
    REQUIRE(got);
    total = got->total;
    rows = got->rows.size();
    for (auto& r : got->rows) {
      known_peers += mine.count(r.peer);
      established += r.tcp_state == "established";
      in_queue += r.recv_queue == 3;
    }
    REQUIRE(herd::net::stop_listener("listed"));
  });
  CHECK(busy_answer);  // an invalid pid is no answer
  CHECK(total == 4);
  CHECK(rows == 2);
  CHECK(known_peers == 2);
  CHECK(established == 2);
  CHECK(in_queue == 2);
}
