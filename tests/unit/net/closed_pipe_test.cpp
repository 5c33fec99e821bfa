// A node never dies of SIGPIPE: a write to a pipe (or socket) whose reader
// has gone fails with EPIPE. The runtime sets SIGPIPE to ignored when it
// starts, unless the program handles it itself.
#include "net_fixture.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>

namespace net_closed_pipe_test {

// Restores the test binary's SIGPIPE disposition afterwards.
struct sigpipe_saved {
  struct sigaction old {};
  sigpipe_saved() { sigaction(SIGPIPE, nullptr, &old); }
  ~sigpipe_saved() { sigaction(SIGPIPE, &old, nullptr); }
};

void set_sigpipe(void (*h)(int)) {
  struct sigaction sa {};
  sa.sa_handler = h;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPIPE, &sa, nullptr);
}

void (*sigpipe_handler())(int) {
  struct sigaction cur {};
  sigaction(SIGPIPE, nullptr, &cur);
  return cur.sa_handler;
}

void count_sigpipe(int) {}

}  // namespace net_closed_pipe_test
using namespace net_closed_pipe_test;

TEST_CASE("a node writing to a pipe whose reader has gone gets EPIPE, not SIGPIPE", "[net][sigpipe]") {
  sigpipe_saved saved;
  set_sigpipe(SIG_DFL);  // what a program starts with
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  ::close(fds[0]);  // the reader is gone
  int err = 0;
  ssize_t wrote = 0;
  herd::test::run_node(net_test::node_opts(2), [&] {
    wrote = ::write(fds[1], "x", 1);  // under SIG_DFL this would end the test binary
    err = errno;
  });
  ::close(fds[1]);
  CHECK(sigpipe_handler() == SIG_IGN);
  CHECK(wrote == -1);
  CHECK(err == EPIPE);
}

TEST_CASE("a node leaves a SIGPIPE handler the program installed alone", "[net][sigpipe]") {
  sigpipe_saved saved;
  set_sigpipe(&count_sigpipe);
  herd::test::run_node(net_test::node_opts(2), [] {});
  CHECK(sigpipe_handler() == &count_sigpipe);
}
