// The README example, built and run as a smoke test so it stays true.
#include <herd/actors.hpp>
#include <cstdio>
using namespace std::chrono_literals;

struct ping { herd::pid from; int n; };
struct pong { int n; };

int main(int argc, char**) {
  if (argc > 1) {  // not in the README: an argument it would ignore is refused
    std::fputs("usage: hello_actors (it takes no arguments)\n", stderr);
    return 2;
  }
  herd::node node({.workers = 2});
  herd::exit_reason why = node.run([] {
    herd::pid echo = herd::spawn([] {
      for (;;)
        herd::receive([](const ping& p) { herd::send(p.from, pong{p.n}); });
    });
    herd::send(echo, ping{herd::self(), 42});
    herd::receive([](pong p) { std::printf("got %d\n", p.n); },
                  herd::after(1s, [] { std::puts("timeout"); }));
  });   // returns when the root exits; every other process is shut down
  std::printf("root exited: %s\n", why.to_string().c_str());
}
