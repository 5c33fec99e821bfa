// The listener's limits: max_connections (including a connection waiting in
// the backlog with no new arrival), set_max_connections at run time,
// suspend/resume, drain, and the EMFILE back-off (in a subprocess with a
// lowered RLIMIT_NOFILE).
#include <herd/runtime/sanitizers.hpp>
#include "net_fixture.hpp"

#include "support/skip.hpp"
#include "support/subprocess.hpp"

#include <atomic>
#include <thread>
#include <vector>

using namespace net_test;
using herd::net::tcp_socket;

namespace net_limits_test {
// Holds the connection open until the peer closes (or a drain notice, when
// `obey_drain`), sending "hi" first so the client knows it was accepted.
void holder(tcp_socket s, bool obey_drain) {
  if (!s.send("hi")) return;
  (void)s.set_active(herd::net::active::once());
  herd::receive([](const herd::net::tcp_closed&) {}, [](const herd::net::tcp_error&) {},
                [](herd::net::tcp_data&) {},
                herd::when([obey_drain](const herd::net::listener_draining&) { return obey_drain; },
                           [](const herd::net::listener_draining&) {}));
}
// True when the server said "hi" within t (the connection was accepted).
bool accepted(const raw_client& c, int t_ms) { return c.recv_n(2, t_ms) == "hi"; }
}  // namespace net_limits_test
using namespace net_limits_test;

TEST_CASE("max_connections holds, and a connection waiting in the backlog is accepted when a slot frees", "[net][listener][limits]") {
  bool first_two = false, third_waited = false, third_later = false;
  std::size_t peak = 0;
  herd::test::run_node(node_opts(2), [&] {
    auto l = herd::net::start_listener("limited", {.bind = "127.0.0.1", .max_connections = 2},
                                       [](tcp_socket s) { holder(std::move(s), false); });
    REQUIRE(l);
    raw_client a(l->port), b(l->port), c(l->port);  // c completes its handshake into the backlog
    first_two = accepted(a, 5000) && accepted(b, 5000);
    third_waited = !accepted(c, 200);
    peak = herd::net::info("limited")->connections;
    a.close();  // no new arrival after this: c must be taken from the backlog
    third_later = accepted(c, 5000);
    REQUIRE(herd::net::stop_listener("limited"));
  });
  CHECK(first_two);
  CHECK(third_waited);
  CHECK(peak == 2);
  CHECK(third_later);
}

TEST_CASE("set_max_connections at run time lets waiting connections in", "[net][listener][limits]") {
  int before = 0, after = 0;
  herd::test::run_node(node_opts(2), [&] {
    auto l = herd::net::start_listener("resizable", {.bind = "127.0.0.1", .max_connections = 1},
                                       [](tcp_socket s) { holder(std::move(s), false); });
    REQUIRE(l);
    std::vector<raw_client> cs;
    for (int i = 0; i < 4; ++i) cs.emplace_back(l->port);
    for (auto& c : cs) before += accepted(c, 200);
    REQUIRE(herd::net::set_max_connections("resizable", 4));
    for (auto& c : cs) after += accepted(c, 5000);
    CHECK(herd::net::info("resizable")->max_connections == 4);
    REQUIRE(herd::net::stop_listener("resizable"));
  });
  CHECK(before == 1);
  CHECK(after == 3);  // the other three
}

TEST_CASE("a suspended listener accepts nothing until resumed", "[net][listener][limits]") {
  bool during = true, after = false, flagged = false;
  herd::test::run_node(node_opts(2), [&] {
    auto l = herd::net::start_listener("pausable", {.bind = "127.0.0.1"},
                                       [](tcp_socket s) { holder(std::move(s), false); });
    REQUIRE(l);
    REQUIRE(herd::net::suspend_listener("pausable"));
    flagged = herd::net::info("pausable")->suspended;
    raw_client c(l->port);
    during = accepted(c, 300);
    REQUIRE(herd::net::resume_listener("pausable"));
    after = accepted(c, 5000);
    REQUIRE(herd::net::stop_listener("pausable"));
  });
  CHECK(flagged);
  CHECK_FALSE(during);
  CHECK(after);
}

TEST_CASE("listen_drops counts the connection attempts a full backlog dropped, at this listener only", "[net][listener][limits]") {
  uint64_t drops_full = 0, drops_other = 0;
  bool still_listed = true;
  int in_progress = 0;
  herd::test::run_node(node_opts(2), [&] {
    auto full = herd::net::start_listener("full", {.bind = "127.0.0.1", .backlog = 4},
                                          [](tcp_socket s) { holder(std::move(s), false); });
    auto other = herd::net::start_listener("other", {.bind = "127.0.0.1"},
                                           [](tcp_socket s) { holder(std::move(s), false); });
    REQUIRE(full);
    REQUIRE(other);
    REQUIRE(herd::net::suspend_listener("full"));
    // Non-blocking connects: a dropped SYN would make a blocking one wait 1 s.
    std::vector<int> fds;
    for (int i = 0; i < 20; ++i) {
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(full->port);
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno == EINPROGRESS) ++in_progress;
      fds.push_back(fd);
    }
    raw_client c(other->port);
    herd::test::eventually([&] { return herd::net::info("full")->listen_drops > 0; }, 5s);
    drops_full = herd::net::info("full")->listen_drops;
    drops_other = herd::net::info("other")->listen_drops;
    for (int fd : fds) ::close(fd);
    REQUIRE(herd::net::stop_listener("full"));
    REQUIRE(herd::net::stop_listener("other"));
    still_listed = bool(herd::net::info("full"));  // gone with its tree
  });
  INFO(in_progress << " connects in progress, " << drops_full << " dropped");
  // A backlog of 4 holds 5 handshakes; the other 15 SYNs are each dropped
  // at least once.
  CHECK(drops_full >= 15);
  CHECK(drops_other == 0);
  CHECK_FALSE(still_listed);
}

TEST_CASE("drain lets connections finish and kills the stragglers at the timeout", "[net][listener][limits]") {
  bool polite_closed = false, stubborn_closed = false, gone = false;
  double took = 0;
  herd::test::run_node(node_opts(2), [&] {
    std::atomic<int> n{0};
    auto l = herd::net::start_listener("drained", {.bind = "127.0.0.1"}, [&n](tcp_socket s) {
      holder(std::move(s), n.fetch_add(1) == 0);  // the first obeys the drain notice, the second not
    });
    REQUIRE(l);
    raw_client polite(l->port);
    REQUIRE(accepted(polite, 5000));
    raw_client stubborn(l->port);
    REQUIRE(accepted(stubborn, 5000));
    auto t0 = herd::test::clk::now();
    REQUIRE(herd::net::drain_listener("drained", 300ms));
    took = herd::test::ms_since(t0);
    polite_closed = polite.wait_eof(1000);
    stubborn_closed = stubborn.wait_eof(5000);
    gone = !herd::net::info("drained");
  });
  CHECK(polite_closed);
  CHECK(stubborn_closed);
  CHECK(gone);
  CHECK(took >= 280);
}

TEST_CASE("out of descriptors, acceptors back off without spinning, hold off while the observer hands its spare over, and resume when fds free up", "[net][listener][limits]") {
#if HERD_ASAN
  // UBSan's vptr check opens a pipe to probe memory: in a process out of
  // descriptors it reports every virtual call as "invalid vptr". The release
  // and TSan builds run this test.
  HERD_SKIP("not under ASan+UBSan (the sanitizer itself needs descriptors)");
#endif
  herd::test::subprocess_options o;
  o.timeout = std::chrono::seconds(60);
  auto r = herd::test::run_subprocess({HERD_NET_EMFILE_PROBE}, o);
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.exited());
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("backoffs>0 yes") != std::string::npos);
  CHECK(r.out.find("cpu_low yes") != std::string::npos);
  CHECK(r.out.find("kept_slot yes") != std::string::npos);
  CHECK(r.out.find("all_accepted yes") != std::string::npos);
}

// A batch an acceptor was still accepting when the drain began reaches
// conns_sup after its drain request. The test plays that acceptor: with the
// real ones parked (suspended), it reserves a slot, accepts a connection
// itself and hands it over once the first connection got its notice (so
// conns_sup has handled the request).
#include "conns_sup.hpp"
#include "listener_state.hpp"

namespace net_limits_test {
struct late_started {
  herd::pid who;
};
struct late_noticed {
  herd::pid who;
};
struct late_release {};  // sent once the test monitors the connection
}  // namespace net_limits_test

TEST_CASE("a connection handed over after the drain began hears of it and ends normally", "[net][listener][limits][drain]") {
  bool b_noticed = false, late_normal = false, drained = false;
  std::string late_reason;
  herd::test::run_node(node_opts(2), [&] {
    herd::pid test = herd::self();
    auto l = herd::net::start_listener("late_drain", {.bind = "127.0.0.1"}, [test](tcp_socket) {
      herd::send(test, late_started{herd::self()});
      herd::receive([&](const herd::net::listener_draining&) { herd::send(test, late_noticed{herd::self()}); });
      herd::receive([](const late_release&) {});
    });
    REQUIRE(l);
    auto st = herd::net::detail::find_listener_state("late_drain");
    REQUIRE(st);
    auto started = [] {
      herd::pid p;
      herd::receive([&](const late_started& s) { p = s.who; }, herd::after(10s));
      return p;
    };
    raw_client a(l->port);
    herd::pid pa = started();
    REQUIRE(pa != herd::no_pid);

    REQUIRE(herd::net::suspend_listener("late_drain"));
    REQUIRE(herd::test::eventually([&] {
      herd::rt::lock_guard<herd::rt::mutex> g(st->wait_m);
      return st->waiting[static_cast<int>(herd::net::detail::wait_reason::resume)].size() == l->acceptors;
    }));
    REQUIRE(st->reserve(1) == 1);
    raw_client b(l->port);
    int fd = -1;
    REQUIRE(herd::test::eventually([&] {
      fd = accept4(st->listen_fd_while_accepting(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      return fd >= 0;
    }));

    struct drain_done {};
    herd::spawn([test] {
      (void)herd::net::drain_listener("late_drain", 20s);
      herd::send(test, drain_done{});
    });
    bool a_noticed = false;
    herd::receive([&](const late_noticed& n) { a_noticed = n.who == pa; }, herd::after(10s));
    REQUIRE(a_noticed);
    herd::send(pa, late_release{});

    herd::net::detail::accepted_batch batch;
    batch.fds.push_back(fd);
    batch.accepted_ms = herd::rt::now_ms();
    uint64_t cs = st->conns_sup.load(std::memory_order_acquire);
    herd::send(herd::pid{static_cast<uint32_t>(cs), static_cast<uint32_t>(cs >> 32)}, std::move(batch));
    herd::pid pb = started();
    REQUIRE(pb != herd::no_pid);
    herd::monitor(pb);
    herd::send(pb, late_release{});
    // Either the notice or (without it) the drain's kill at its timeout.
    herd::receive([&](const late_noticed& n) { b_noticed = n.who == pb; },
                  [&](const herd::down& d) { late_reason = d.reason.to_string(); });
    if (b_noticed)
      herd::receive([&](const herd::down& d) {
        late_reason = d.reason.to_string();
        late_normal = d.reason.is_normal();
      });
    herd::receive([&](const drain_done&) { drained = true; }, herd::after(30s));
  });
  INFO("late connection ended: " << late_reason);
  CHECK(b_noticed);
  CHECK(late_normal);
  CHECK(drained);
}
