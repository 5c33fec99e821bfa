#include <herd/actors.hpp>

int main() {
  herd::node n({.workers = 2, .quiet = true});
  int got = 0;
  herd::exit_reason r = n.run([&] {
    herd::pid me = herd::self();
    herd::spawn([me] { herd::send(me, 7); });
    got = herd::receive([](int v) { return v; });
  });
  return r.is_normal() && got == 7 ? 0 : 1;
}
