// Batched sends (runtime_options::batch_sends, runtime/src/io/send_ring.hpp):
// the sends of one worker's processes go to the kernel together, and each
// sender still gets its own result. CMakeLists.txt runs these and the other
// [send] cases a second time with HERD_BATCH_SENDS=0 (one send(2) each).
#include "net_fixture.hpp"
#include "support/skip.hpp"

#include <herd/runtime/runtime.hpp>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace net_test;
using herd::net::errc;

namespace batched_send_test {
struct go {};

bool batching_asked() {
  const char* env = std::getenv("HERD_BATCH_SENDS");
  return !(env && std::strcmp(env, "0") == 0);
}

struct send_counts {
  uint64_t batched = 0;
  uint64_t flushes = 0;
};

send_counts counts_now() {
  herd::rt::runtime_metrics m;
  herd::rt::current_metrics(m);
  send_counts c;
  for (auto& w : m.workers) {
    c.batched += w.sends_batched;
    c.flushes += w.send_flushes;
  }
  return c;
}

// Everything the peer receives until EOF (the sender closed), or "" on error.
std::string read_to_eof(int fd) {
  std::string got;
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0) return got;
    if (n < 0) return errno == EINTR ? got : std::string{};
    got.append(buf, static_cast<std::size_t>(n));
  }
}

std::string message(int i, int round) { return "<" + std::to_string(i) + ":" + std::to_string(round) + ">"; }

// Inside a node: runs one(i, wait) in n processes, where wait() returns once
// every process has called it (the root then sends all of them `go` in a
// row, so they are runnable together). at_start runs just before that, at_end
// once every process has returned.
template <class One, class AtStart, class AtEnd>
void all_at_once(int n, One one, AtStart at_start, AtEnd at_end) {
  std::atomic<int> ready{0};
  std::atomic<int> finished{0};
  std::vector<herd::pid> procs;
  for (int i = 0; i < n; ++i)
    procs.push_back(herd::spawn([&, i] {
      one(i, [&] {
        ready.fetch_add(1);
        herd::receive([](go) {});
      });
      finished.fetch_add(1);
    }));
  while (ready.load() < n) herd::sleep(1ms);  // polls the count
  at_start();
  for (herd::pid p : procs) herd::send(p, go{});
  while (finished.load() < n) herd::sleep(1ms);  // polls the count
  at_end();
}
}  // namespace batched_send_test
using namespace batched_send_test;

TEST_CASE("sends of many processes on one worker go to the kernel together, each sender gets its own result and "
          "every byte arrives in order",
          "[net][send][batch]") {
  constexpr int n = 32;
  constexpr int rounds = 40;
  std::vector<int> peers(n, -1);
  std::vector<std::string> failures(n);
  send_counts before, after;
  herd::test::run_node(node_opts(1), [&] {
    all_at_once(
        n,
        [&](int i, auto wait) {
          auto p = connected_pair();
          peers[i] = std::exchange(p.peer.fd, -1);
          wait();
          for (int r = 0; r < rounds && p.mine.valid(); ++r)
            if (auto res = p.mine.send(message(i, r), 5s); !res) {
              failures[i] = "round " + std::to_string(r) + ": " + res.error().message();
              break;
            }
          if (!p.mine.valid()) failures[i] = "no connection";
        },
        [&] { before = counts_now(); }, [&] { after = counts_now(); });
  });
  for (int i = 0; i < n; ++i) {
    INFO("sender " << i);
    CHECK(failures[i].empty());
    REQUIRE(peers[i] >= 0);
    std::string want;
    for (int r = 0; r < rounds; ++r) want += message(i, r);
    CHECK(read_to_eof(peers[i]) == want);
    ::close(peers[i]);
  }
  const uint64_t batched = after.batched - before.batched;
  const uint64_t flushes = after.flushes - before.flushes;
  INFO(batched << " sends batched in " << flushes << " flushes");
  if (!batching_asked()) {
    CHECK(batched == 0);
    return;
  }
  if (batched == 0) HERD_SKIP("io_uring is refused here: every send was send(2)");
  CHECK(batched >= uint64_t(n) * rounds);
  // All 32 senders are runnable at once on the one worker: each round's
  // sends share a flush, not one each.
  CHECK(flushes * 4 <= batched);
}

TEST_CASE("HERD_BATCH_SENDS other than 0 or 1 is refused with a clear error when the node starts", "[net][batch]") {
  const char* was = std::getenv("HERD_BATCH_SENDS");
  std::string saved = was ? was : "";
  ::setenv("HERD_BATCH_SENDS", "off", 1);
  auto o = node_opts(1);
  o.quiet = true;
  CHECK_THROWS_WITH(herd::node(o), Catch::Contains("HERD_BATCH_SENDS must be 0") && Catch::Contains("not 'off'"));
  if (was) ::setenv("HERD_BATCH_SENDS", saved.c_str(), 1);
  else ::unsetenv("HERD_BATCH_SENDS");
}

TEST_CASE("a batched send to a peer that reset fails with reset for that sender only", "[net][send][batch]") {
  constexpr int n = 16;
  std::vector<int> sent(n, -1);  // 1: sent; 0: failed with failed_with[i]
  std::vector<errc> failed_with(n, errc{});
  herd::test::run_node(node_opts(1), [&] {
    all_at_once(
        n,
        [&](int i, auto wait) {
          auto p = connected_pair();
          if (i % 2 == 1) {  // an abortive close: the peer's RST is in before the sends
            linger lg{1, 0};
            setsockopt(p.peer.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
            p.peer.close();
          }
          wait();
          auto r = p.mine.send("hello", 5s);
          sent[i] = r ? 1 : 0;
          if (!r) failed_with[i] = r.code();
        },
        [] {}, [] {});
  });
  for (int i = 0; i < n; ++i) {
    INFO("sender " << i);
    CHECK(sent[i] == (i % 2 == 0 ? 1 : 0));
    if (i % 2 == 1) CHECK(failed_with[i] == errc::reset);
  }
}
