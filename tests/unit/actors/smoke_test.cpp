#include <herd/actors.hpp>

#include <catch2/catch.hpp>

using namespace std::chrono_literals;

TEST_CASE("a root process runs and the node returns its exit reason") {
  herd::node n({.workers = 2, .quiet = true});
  int got = 0;
  auto r = n.run([&] {
    herd::pid me = herd::self();
    herd::spawn([me] { herd::send(me, 42); });
    herd::receive([&](int v) { got = v; });
  });
  CHECK(r.is_normal());
  CHECK(got == 42);
  CHECK(herd::node::live_messages() == 0);
}
