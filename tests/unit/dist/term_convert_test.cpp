// C++ types to and from terms (HERD_TERM_RECORD and the built-in
// mappings), and patterns on a term's shape, in herd::receive too.
#include <herd/dist/term_codec.hpp>
#include <herd/dist/term_convert.hpp>
#include <herd/dist/term_match.hpp>

#include "support/node_fixture.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

using herd::atom;
using herd::term;

namespace app {
struct push {
  std::string user;
  std::string text;
  int64_t seq = 0;
};
HERD_TERM_RECORD(push, user, text, seq)

struct roster {
  std::vector<std::string> names;
  std::map<std::string, int> scores;
  std::optional<double> rate;
  std::pair<bool, herd::atom> flag;
  std::tuple<int, term> extra;
  push last;
};
HERD_TERM_RECORD_AS(roster, "roster_v1", names, scores, rate, flag, extra, last)

struct empty_msg {};
HERD_TERM_RECORD(empty_msg)
}  // namespace app

namespace {
term a(const char* s) { return term(atom(s)); }
}

TEST_CASE("term_convert: a record struct becomes a tuple tagged with its name, and back") {
  term t = herd::to_term(app::push{"user42", "hello", 12345});
  CHECK(t == term::tuple({a("push"), term::binary("user42"), term::binary("hello"), 12345}));
  CHECK(herd::to_string(t) == "{push,<<\"user42\">>,<<\"hello\">>,12345}");
  auto p = herd::from_term<app::push>(t);
  REQUIRE(p);
  CHECK(p->user == "user42");
  CHECK(p->seq == 12345);
  CHECK(herd::to_term(app::empty_msg{}) == term::tuple({a("empty_msg")}));
  CHECK(herd::from_term<app::empty_msg>(term::tuple({a("empty_msg")})));
}

TEST_CASE("term_convert: every built-in mapping round-trips through the external term format") {
  app::roster r;
  r.names = {"ann", "bob"};
  r.scores = {{"ann", 3}, {"bob", -7}};
  r.rate = 0.25;
  r.flag = {true, atom("on")};
  r.extra = {42, term::list({1}, a("x"))};
  r.last = {"u", "t", 1};
  term t = herd::to_term(r);
  CHECK(t[0] == a("roster_v1"));
  CHECK(t[3] == term(0.25));
  CHECK(t[4] == term::tuple({a("true"), a("on")}));
  auto back = herd::from_term<app::roster>(*herd::binary_to_term(herd::term_to_binary(t)));
  REQUIRE(back);
  CHECK(back->names == r.names);
  CHECK(back->scores == r.scores);
  CHECK(back->rate == 0.25);
  CHECK(back->flag == r.flag);
  CHECK(std::get<1>(back->extra) == std::get<1>(r.extra));
  CHECK(back->last.text == "t");
  r.rate.reset();
  CHECK(herd::to_term(r)[3] == a("undefined"));
  CHECK_FALSE(herd::from_term<app::roster>(herd::to_term(r))->rate);
}

TEST_CASE("term_convert: a term of the wrong shape is a mismatch that names the field") {
  auto bad = herd::from_term<app::push>(term::tuple({a("push"), term::binary("u"), term::binary("t"), term::binary("x")}));
  REQUIRE_FALSE(bad);
  CHECK(bad.code() == herd::term_errc::mismatch);
  CHECK(bad.error().message() == "mismatch: push.seq: expected an integer, got <<\"x\">>");
  CHECK_FALSE(herd::from_term<app::push>(term::tuple({a("pull"), 1, 2, 3})));
  CHECK_FALSE(herd::from_term<app::push>(term::tuple({a("push"), 1})));
  CHECK_FALSE(herd::from_term<app::push>(term(1)));
  CHECK_FALSE(herd::from_term<int8_t>(term(300)));
  CHECK_FALSE(herd::from_term<uint32_t>(term(-1)));
  CHECK(*herd::from_term<uint64_t>(term(uint64_t(UINT64_MAX))) == UINT64_MAX);
  CHECK_FALSE(herd::from_term<int64_t>(term(uint64_t(UINT64_MAX))));
  CHECK_FALSE(herd::from_term<bool>(a("yes")));
  CHECK(*herd::from_term<double>(term(2)) == 2.0);
  auto v = herd::from_term<std::vector<int>>(term::list({1, a("two")}));
  REQUIRE_FALSE(v);
  CHECK(v.error().detail == "[1]: expected an integer, got two");
  CHECK_FALSE(herd::from_term<std::vector<int>>(term::list({1}, a("x"))));
  CHECK_FALSE(herd::from_term<std::string>(term::string("abc")));  // a list is not a binary
}

TEST_CASE("term_match: patterns on a term's shape") {
  using herd::_;
  term ok = term::tuple({a("ok"), term::list({1, 2})});
  CHECK(herd::match(ok, herd::tuple_of("ok", _)));
  CHECK_FALSE(herd::match(ok, herd::tuple_of("error", _)));
  CHECK_FALSE(herd::match(ok, herd::tuple_of("ok")));
  CHECK(herd::match(ok, herd::tuple_of(atom("ok"), herd::list_of(1, herd::an_integer))));
  CHECK_FALSE(herd::match(ok, herd::tuple_of("ok", herd::list_of(1))));
  CHECK_FALSE(herd::match(term(1), herd::tuple_of(_)));
  CHECK_FALSE(herd::match(term(1.0), 1));  // exact
  CHECK(herd::match(term(1.0), 1.0));
  CHECK(herd::match(term::map({{a("k"), 5}}), herd::has_key("k", herd::an_integer)));
  CHECK_FALSE(herd::match(term::map({{a("k"), 5}}), herd::has_key("j", _)));
  auto big = [](const term& t) { return t.is_integer() && t.to_int64() && *t.to_int64() > 10; };
  CHECK(herd::match(term::tuple({a("n"), 11}), herd::tuple_of("n", big)));
  CHECK_FALSE(herd::match(term::tuple({a("n"), 9}), herd::tuple_of("n", herd::all_of(herd::an_integer, big))));
  std::string user;
  int64_t seq = 0;
  CHECK(herd::match(herd::to_term(app::push{"u7", "hi", 9}), herd::tuple_of("push", herd::into(user), herd::a_binary, herd::into(seq))));
  CHECK(user == "u7");
  CHECK(seq == 9);
}

TEST_CASE("term_match: a process receives terms by shape with herd::when, leaving the others queued") {
  std::vector<std::string> seen;
  herd::test::run_node(herd::test::opts(2), [&] {
    using herd::_;
    herd::pid me = herd::self();
    herd::send(me, term::tuple({a("noise"), 1}));
    herd::send(me, herd::to_term(app::push{"u1", "first", 1}));
    herd::send(me, term::tuple({a("stop")}));
    std::string user;
    auto push = herd::tuple_of("push", herd::into(user), herd::a_binary, herd::an_integer);
    for (bool more = true; more;) {
      more = herd::receive(herd::when(push, [&](const term& t) { return seen.push_back(user + ":" + std::string(t[2].bytes())), true; }),
                           herd::when(herd::tuple_of("stop"), [&](const term&) { return false; }));
    }
    // {noise, 1} is still there, in order.
    herd::receive([&](const term& t) { seen.push_back(herd::to_string(t)); });
  });
  CHECK(seen == std::vector<std::string>{"u1:first", "{noise,1}"});
}
