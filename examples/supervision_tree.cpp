// A supervision tree: build it, print it (which_children, recursively), kill
// a worker and watch its supervisor start it again. Built and run as a test.
//
//   top_sup (one_for_one)
//     db                       a herd::server, registered as "db"
//     cache_sup (rest_for_one) cache, then cache_janitor (which depends on it)
//     conns_sup (simple_one_for_one) connection(n) for every start_child(conns_sup, n)
#include <herd/actors.hpp>
#include <herd/actors/logger.hpp>
#include <herd/supervisors/supervisor.hpp>

#include <cstdio>

namespace sup = herd::supervisor;
using namespace std::chrono_literals;

namespace example {

struct query {
  int key;
};

// A stateful server is a class (gen_server's callbacks as members).
struct db : herd::server<db> {
  using calls = herd::types<query>;
  int handle_call(const query& q, const herd::from&) { return q.key * 2; }
};

void cache() {
  for (;;) herd::receive([](herd::call_request<query>&& c) { herd::reply(c.from, c.req.key); });
}

void janitor() {
  for (;;) herd::receive([](int) {}, herd::after(1s, [] { /* sweep the cache */ }));
}

void connection(int n) {
  for (;;) herd::receive([n](herd::call_request<query>&& c) { herd::reply(c.from, n); });
}

herd::pid child_pid(herd::pid sup, const std::string& id) {
  for (const sup::child_info& c : sup::which_children(sup))
    if (c.id == id) return c.pid;
  return herd::no_pid;
}

void print_tree(herd::pid s, int depth) {
  for (const sup::child_info& c : sup::which_children(s)) {
    const bool is_sup = c.type == sup::child_type::supervisor;
    std::printf("%*s%-14s %-10s %s\n", depth * 2, "", c.id.empty() ? "(dynamic)" : c.id.c_str(),
                c.pid ? c.pid.to_string().c_str() : "undefined", is_sup ? "supervisor" : "worker");
    if (is_sup && c.pid) print_tree(c.pid, depth + 1);
  }
}

}  // namespace example

int main(int argc, char**) {
  using namespace example;
  if (argc > 1) {  // an argument it would ignore is refused
    std::fputs("usage: supervision_tree (it takes no arguments)\n", stderr);
    return 2;
  }
  herd::node node({.workers = 2});
  herd::exit_reason why = node.run([] {
    auto top = sup::start_link(
        {.strategy = sup::one_for_one, .intensity = 3, .period = 5s, .name = "top_sup"},
        {{.id = "db", .start = [] { return herd::serve<db>(); }, .registered_name = "db"},
         sup::supervisor_spec("cache_sup", {.strategy = sup::rest_for_one},
                              {{.id = "cache", .start = cache}, {.id = "cache_janitor", .start = janitor}}),
         sup::supervisor_spec("conns_sup", {.strategy = sup::simple_one_for_one},
                              {{.id = "connection", .start = connection, .restart = sup::temporary}})});
    if (!top) {
      std::printf("the tree did not start: %s %s\n", sup::to_string(top.code()), top.error().detail.c_str());
      return;
    }
    herd::pid conns = child_pid(*top, "conns_sup");
    for (int n = 1; n <= 3; ++n) (void)sup::start_child(conns, n);

    std::printf("the tree (top_sup %s):\n", top->to_string().c_str());
    print_tree(*top, 1);

    herd::pid old_db = child_pid(*top, "db");
    std::printf("killing db %s\n", old_db.to_string().c_str());
    herd::exit(old_db, herd::exit_reason::kill());
    herd::pid new_db = herd::no_pid;
    while (!new_db || new_db == old_db) {
      herd::sleep(1ms);
      new_db = child_pid(*top, "db");
    }
    std::printf("db restarted: %s -> %s, and it answers: %d\n", old_db.to_string().c_str(),
                new_db.to_string().c_str(), herd::call<int>(new_db, query{21}));
    print_tree(*top, 1);

    // Stops every child, deepest and last-started first; a value says how it went.
    if (auto stopped = sup::stop(*top, herd::exit_reason::shutdown(), 10s); !stopped)
      std::fprintf(stderr, "supervision_tree: %s\n", stopped.error().message().c_str());
  });
  herd::log_flush();  // the crash report (stderr) is out before we finish
  std::printf("root exited: %s\n", why.to_string().c_str());
  return why.is_normal() ? 0 : 1;
}
