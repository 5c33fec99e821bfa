// Links herd::dist from an install tree: a term crosses the external term
// format and back, and a process sends one to itself as a dist::etf payload.
#include <herd/actors.hpp>
#include <herd/dist/node.hpp>

#include <cstdio>

int main() {
  herd::term t = herd::term::tuple({herd::atom("push"), herd::term::binary("user42"), 12345});
  auto back = herd::binary_to_term(herd::term_to_binary(t));
  if (!back || *back != t) {
    std::printf("round trip: %s\n", back ? herd::to_string(*back).c_str() : back.error().message().c_str());
    return 1;
  }
  herd::node n({.workers = 1, .quiet = true});
  bool same = false;
  herd::exit_reason r = n.run([&] {
    herd::dist::send(herd::self(), herd::term_to_binary(t));
    herd::receive([&](const herd::dist::etf_message& m) {
      auto got = m.term();
      same = got && *got == t;
    });
  });
  std::printf("dist_user: %s\n", herd::to_string(t).c_str());
  return r.is_normal() && same ? 0 : 1;
}
