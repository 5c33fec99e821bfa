// Active modes: once, n, always; closure and reset as messages.
#include "net_fixture.hpp"

#include <string>
#include <vector>

using namespace net_test;
using herd::net::active;
using herd::net::tcp_closed;
using herd::net::tcp_data;
using herd::net::tcp_error;
using herd::net::tcp_passive;

namespace {

// From a process: the next net message within `t`, as a short description
// ("data:<bytes>", "closed", "error:<code>", "passive", "none").
std::string next_event(std::chrono::milliseconds t = 5s) {
  return herd::receive([](tcp_data& d) { return "data:" + d.data.to_string(); },
                       [](const tcp_closed&) { return std::string("closed"); },
                       [](const tcp_error& e) { return std::string("error:") + herd::net::to_string(e.err.code); },
                       [](const tcp_passive&) { return std::string("passive"); },
                       herd::after(t, [] { return std::string("none"); }));
}

}  // namespace

TEST_CASE("active once delivers exactly one message per arm", "[net][active]") {
  std::vector<std::string> seen;
  herd::test::run_node(node_opts(), [&] {
    auto p = connected_pair();
    REQUIRE(p.mine.valid());
    p.peer.send_all("a");
    REQUIRE(p.mine.set_active(active::once()));
    seen.push_back(next_event());
    p.peer.send_all("b");
    seen.push_back(next_event(150ms));  // not re-armed: nothing
    REQUIRE(p.mine.set_active(active::once()));
    seen.push_back(next_event());
    REQUIRE(p.mine.set_active(active::once()));
    p.peer.send_all("c");
    seen.push_back(next_event());
    p.peer.send_all("d");
    seen.push_back(next_event(150ms));
    auto rest = p.mine.recv(0, 1s);  // passive again: the bytes wait in the socket
    seen.push_back(rest ? rest->to_string() : "recv failed");
  });
  CHECK(seen == std::vector<std::string>{"data:a", "none", "data:b", "data:c", "none", "d"});
}

TEST_CASE("active n delivers n messages then tcp_passive, and n adds to the count", "[net][active]") {
  std::vector<std::string> seen;
  herd::test::run_node(node_opts(), [&] {
    auto p = connected_pair();
    REQUIRE(p.mine.valid());
    REQUIRE(p.mine.set_active(active::n(1)));
    REQUIRE(p.mine.set_active(active::n(2)));  // 3 in all
    for (char c : std::string("xyz")) {
      p.peer.send_all(std::string(1, c));
      seen.push_back(next_event());
    }
    seen.push_back(next_event());           // the count ran out
    p.peer.send_all("w");
    seen.push_back(next_event(150ms));      // passive now
    REQUIRE(p.mine.set_active(active::n(-4)));  // a total <= 0: tcp_passive at once
    seen.push_back(next_event());
    auto r = p.mine.recv(0, 1s);
    seen.push_back(r ? r->to_string() : "recv failed");
  });
  CHECK(seen == std::vector<std::string>{"data:x", "data:y", "data:z", "passive", "none", "passive", "w"});
}

TEST_CASE("active always delivers every read without re-arming", "[net][active]") {
  std::string got;
  int messages = 0;
  herd::test::run_node(node_opts(), [&] {
    auto p = connected_pair();
    REQUIRE(p.mine.valid());
    REQUIRE(p.mine.set_active(active::always()));
    for (int i = 0; i < 20; ++i) {
      p.peer.send_all(std::to_string(i % 10));
      std::string e = next_event();
      if (e.rfind("data:", 0) != 0) break;
      got += e.substr(5);
      ++messages;
    }
  });
  CHECK(got == "01234567890123456789");
  CHECK(messages == 20);
}

TEST_CASE("tcp_closed arrives after all the data the peer sent", "[net][active]") {
  std::string expect, got, last;
  for (int i = 0; i < 40000; ++i) expect += char('a' + i % 26);
  herd::test::run_node(node_opts(), [&] {
    auto p = connected_pair();
    REQUIRE(p.mine.valid());
    p.peer.send_all(expect);
    p.peer.close();
    for (;;) {
      REQUIRE(p.mine.set_active(active::once()));
      std::string e = next_event();
      if (e.rfind("data:", 0) == 0) {
        got += e.substr(5);
        continue;
      }
      last = e;
      break;
    }
    // After the close: re-arming delivers nothing more.
    REQUIRE(p.mine.set_active(active::once()));
    CHECK(next_event(100ms) == "none");
  });
  CHECK(got == expect);
  CHECK(last == "closed");
}

TEST_CASE("a reset arrives as tcp_error then tcp_closed", "[net][active]") {
  std::vector<std::string> seen;
  herd::test::run_node(node_opts(), [&] {
    auto p = connected_pair();
    REQUIRE(p.mine.valid());
    p.peer.reset();
    REQUIRE(p.mine.set_active(active::always()));
    seen.push_back(next_event());
    seen.push_back(next_event());
  });
  CHECK(seen == std::vector<std::string>{"error:reset", "closed"});
}
