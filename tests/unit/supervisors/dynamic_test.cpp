// simple_one_for_one: many children of one spec, started with extra
// arguments, restarted with the same ones.
#include "sup_fixtures.hpp"

#include <catch2/catch.hpp>

using namespace sup_test;
using herd::test::opts;
using herd::test::run_node;

namespace {

struct started {
  int n;
  std::string name;
  herd::pid who;
};

auto conn_spec() {
  return sup::child_spec{.id = "conn", .start = [](int n, std::string name, herd::pid report_to) {
                           herd::send(report_to, started{n, name, herd::self()});
                           worker();
                         }};
}

}  // namespace

TEST_CASE("start_child on a simple_one_for_one supervisor passes its extra arguments to the start function",
          "[supervisor][dynamic]") {
  unsigned workers = HERD_WORKERS();
  std::vector<started> got;
  std::vector<herd::pid> pids;
  auto r = run_node(opts(workers), [&] {
    auto s = sup::start_link({.strategy = sup::simple_one_for_one}, {conn_spec()});
    for (int i = 0; i < 3; ++i) {
      auto c = sup::start_child(*s, i, "conn-" + std::to_string(i), herd::self());
      if (c) pids.push_back(*c);
      herd::receive([&](started st) { got.push_back(st); });
    }
    (void)sup::stop(*s);
  });
  CHECK(r.is_normal());
  REQUIRE(got.size() == 3);
  REQUIRE(pids.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(got[i].n == i);
    CHECK(got[i].name == "conn-" + std::to_string(i));
    CHECK(got[i].who == pids[i]);
  }
}

TEST_CASE("a string literal given to start_child reaches a std::string parameter", "[supervisor][dynamic]") {
  std::string name;
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    auto s = sup::start_link({.strategy = sup::simple_one_for_one}, {conn_spec()});
    (void)sup::start_child(*s, 1, "literal", herd::self());
    herd::receive([&](started st) { name = st.name; });
    (void)sup::stop(*s);
  });
  CHECK(r.is_normal());
  CHECK(name == "literal");
}

TEST_CASE("a dynamic child is restarted with the same arguments", "[supervisor][dynamic]") {
  started first{}, second{};
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    auto s = sup::start_link({.strategy = sup::simple_one_for_one}, {conn_spec()});
    (void)sup::start_child(*s, 42, std::string("answer"), herd::self());
    herd::receive([&](started st) { first = st; });
    herd::send(first.who, crash{});
    herd::receive([&](started st) { second = st; });
    (void)sup::stop(*s);
  });
  CHECK(r.is_normal());
  CHECK(second.n == 42);
  CHECK(second.name == "answer");
  CHECK(second.who != first.who);
}

TEST_CASE("start_child with arguments the start function does not take is refused with bad_args",
          "[supervisor][dynamic]") {
  std::vector<sup::errc> codes;
  std::string detail;
  std::size_t children_after = 99;
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    auto s = sup::start_link({.strategy = sup::simple_one_for_one}, {conn_spec()});
    auto a = sup::start_child(*s, "only a string");
    codes.push_back(a.code());
    detail = a.error().detail;
    auto b = sup::start_child(*s, 1.5, std::string("x"), herd::self());  // double, not int
    codes.push_back(b.code());
    auto c = sup::start_child(*s, sup::child_spec{.id = "x", .start = worker});  // a spec, not arguments
    codes.push_back(c.code());
    children_after = sup::which_children(*s).size();
    (void)sup::stop(*s);

    auto st = sup::start_link({}, {{.id = "a", .start = worker}});
    auto d = sup::start_child(*st, 1);  // arguments to a static supervisor
    codes.push_back(d.code());
    (void)sup::stop(*st);
  });
  CHECK(r.is_normal());
  CHECK(codes == std::vector<sup::errc>(4, sup::errc::bad_args));
  CHECK(detail.find("int") != std::string::npos);  // names what it takes
  CHECK(children_after == 0);
}

TEST_CASE("terminate_child on a simple_one_for_one supervisor takes a pid and removes the child",
          "[supervisor][dynamic]") {
  sup::child_counts before, after;
  std::vector<sup::errc> errors;
  bool ok = false, dead = false;
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    auto s = sup::start_link({.strategy = sup::simple_one_for_one}, {{.id = "w", .start = worker}});
    herd::pid a = *sup::start_child(*s);
    (void)sup::start_child(*s);
    before = sup::count_children(*s);
    ok = sup::terminate_child(*s, a).ok();
    dead = !alive(a);
    after = sup::count_children(*s);
    errors.push_back(sup::terminate_child(*s, a).code());    // gone
    errors.push_back(sup::terminate_child(*s, "w").code());  // by id: not for dynamic children
    errors.push_back(sup::restart_child(*s, "w").code());
    errors.push_back(sup::delete_child(*s, "w").code());
    (void)sup::stop(*s);
  });
  CHECK(r.is_normal());
  CHECK(ok);
  CHECK(dead);
  CHECK(before.specs == 1);
  CHECK(before.active == 2);
  CHECK(before.workers == 2);
  CHECK(after.active == 1);
  CHECK(after.workers == 1);
  CHECK(errors == std::vector<sup::errc>{sup::errc::not_found, sup::errc::not_found, sup::errc::simple_one_for_one,
                                         sup::errc::simple_one_for_one});
}

TEST_CASE("temporary dynamic children are forgotten when they end and which_children lists the running ones",
          "[supervisor][dynamic]") {
  std::size_t listed = 0, after = 0;
  auto r = run_node(herd::test::deterministic_opts(), [&] {
    auto s = sup::start_link({.strategy = sup::simple_one_for_one},
                             {{.id = "t", .start = worker, .restart = sup::temporary}});
    std::vector<herd::pid> ps;
    for (int i = 0; i < 5; ++i) ps.push_back(*sup::start_child(*s));
    listed = sup::which_children(*s).size();
    herd::send(ps[0], crash{});
    herd::send(ps[1], finish{});
    herd::test::eventually([&] { return sup::count_children(*s).active == 3; });
    after = sup::which_children(*s).size();
    (void)sup::stop(*s);
  });
  CHECK(r.is_normal());
  CHECK(listed == 5);
  CHECK(after == 3);
}
