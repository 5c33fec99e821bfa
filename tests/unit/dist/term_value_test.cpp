// herd::term as a value: construction, readers, Erlang's term order,
// exact equality, hashing and printing in Erlang syntax.
#include <herd/dist/term.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

using herd::atom;
using herd::term;

namespace {
term big(const char* decimal) { return *term::parse_integer(decimal); }
term a(const char* s) { return term(atom(s)); }
}  // namespace

TEST_CASE("term: small values are 16 bytes and inline, an atom compare is an index compare") {
  STATIC_REQUIRE(sizeof(term) == 16);
  term x = a("hello"), y = a("hello");
  CHECK(x.as_atom().index() == y.as_atom().index());
  CHECK(x == y);
  CHECK(atom("hello") != atom("world"));
  CHECK(atom() == atom(""));
  CHECK(term(5).to_int64() == 5);
  CHECK(term().is_nil());
  CHECK(term::tuple({}).size() == 0);
}

TEST_CASE("term: atoms take UTF-8 of up to 255 code points and refuse the rest with an error") {
  CHECK(atom("héllo_wörld").text() == "héllo_wörld");
  std::string max;
  for (int i = 0; i < 255; ++i) max += "ж";
  CHECK(atom::make(max));
  auto too_long = atom::make(max + "ж");
  REQUIRE_FALSE(too_long);
  CHECK(too_long.code() == herd::term_errc::bad_atom);
  CHECK_FALSE(atom::make("\xff"));
  CHECK_FALSE(atom::make("\xc0\x80"));       // overlong
  CHECK_FALSE(atom::make("\xed\xa0\x80"));   // a surrogate
  CHECK_THROWS_AS(atom("\xff"), std::invalid_argument);
}

TEST_CASE("term: integers of any size keep their value exactly") {
  CHECK(term(INT64_MAX).to_int64() == INT64_MAX);
  CHECK(term(INT64_MIN).to_int64() == INT64_MIN);
  term u = term(uint64_t(UINT64_MAX));
  CHECK(u.is_integer());
  CHECK_FALSE(u.to_int64());
  CHECK(u.magnitude() == std::vector<uint8_t>(8, 0xff));
  CHECK(herd::to_string(u) == "18446744073709551615");
  CHECK(u == big("18446744073709551615"));
  // A decimal that fits 64 bits is a small integer, whatever its spelling.
  CHECK(big("-9223372036854775808").to_int64() == INT64_MIN);
  CHECK(big("-0") == term(0));
  const char* p1000 =
      "-10715086071862673209484250490600018105614048117055336074437503883703510511249361224931983788156958581275946729175531"
      "468251871452856923140435984577574698574803934567774824230985421074605062371141877954182153046474983581941267398767559"
      "165543946077062914571196477686542167660429831652624386837205668069376";
  CHECK(herd::to_string(big(p1000)) == p1000);
  CHECK_FALSE(term::parse_integer("12x"));
  CHECK_FALSE(term::parse_integer(""));
}

TEST_CASE("term: floats refuse NaN and infinity, and 0.0 and -0.0 are different terms") {
  CHECK_THROWS_AS(term(std::numeric_limits<double>::quiet_NaN()), std::invalid_argument);
  CHECK_THROWS_AS(term(std::numeric_limits<double>::infinity()), std::invalid_argument);
  CHECK(term(0.0) != term(-0.0));
  CHECK(term(-0.0) < term(0.0));
  CHECK(term(1) != term(1.0));
}

TEST_CASE("term: lists flatten a list tail, and improper lists keep theirs") {
  term l = term::list({1}, term::list({2, 3}));
  CHECK(l == term::list({1, 2, 3}));
  CHECK(l.is_proper_list());
  term imp = term::list({1, 2}, a("x"));
  CHECK_FALSE(imp.is_proper_list());
  CHECK(imp.tail() == a("x"));
  CHECK(term::list({}, a("x")) == a("x"));  // [ | x] is just x
  CHECK(term::string("hé") == term::list({104, 233}));
  CHECK(term::string("hé").to_text() == "hé");
  CHECK(term::binary("raw").to_text() == "raw");
  CHECK_FALSE(imp.to_text());
}

TEST_CASE("term: maps keep the last value of a key, find by key, and compare regardless of insertion order") {
  term m = term::map({{a("a"), 1}, {a("b"), 2}, {a("a"), 3}});
  CHECK(m.size() == 2);
  REQUIRE(m.find(a("a")));
  CHECK(*m.find(a("a")) == term(3));
  CHECK(m.find(a("c")) == nullptr);
  CHECK(m.find(term(1)) == nullptr);
  term m2 = term::map({{a("b"), 2}, {a("a"), 3}});
  CHECK(m == m2);
  CHECK(m.hash() == m2.hash());
  // 1 and 1.0 are different keys.
  term n = term::map({{1, a("int")}, {1.0, a("float")}});
  CHECK(n.size() == 2);
  CHECK(*n.find(term(1.0)) == a("float"));
}

TEST_CASE("term: bitstrings carry a bit count and clear the unused bits") {
  term b = term::bitstring("\x01\xff", 3);
  CHECK(b.bit_size() == 11);
  CHECK(b.bytes() == std::string_view("\x01\xe0", 2));
  CHECK_FALSE(b.is_binary());
  CHECK(term::binary("ab").is_binary());
  CHECK_THROWS_AS(term::bitstring("a", 0), std::invalid_argument);
  CHECK_THROWS_AS(term::bitstring("a", 9), std::invalid_argument);
}

TEST_CASE("term: reading a term as the wrong type throws bad_term_access") {
  CHECK_THROWS_AS(term(1).as_atom(), herd::bad_term_access);
  CHECK_THROWS_AS(a("x").to_int64(), herd::bad_term_access);
  CHECK_THROWS_AS(term::tuple({1})[1], herd::bad_term_access);
  CHECK_THROWS_AS(term(1).size(), herd::bad_term_access);
}

TEST_CASE("term: Erlang's term order across and within types") {
  herd::erl_pid p{atom("nonode@nohost"), 12, 0, 0};
  herd::erl_ref r{atom("nonode@nohost"), 0, 3, {1, 2, 3}};
  herd::erl_port po{atom("nonode@nohost"), 5, 0};
  // number < atom < reference < fun < port < pid < tuple < map < nil < list < bitstring
  std::vector<term> ordered = {
      big("-100000000000000000000"), term(-1.5), term(-1), term(0), term(0.5),
      term(1), term(1.0), term(2), term(1e30), big("1000000000000000000000000000000000"),
      a(""), a("a"), a("ab"), a("b"), term::reference(r), term::export_fun(atom("erlang"), atom("abs"), 1),
      term::port(po), term::pid(p), term::tuple({}), term::tuple({2}), term::tuple({1, 1}), term::map({}),
      term::map({{1, 2}}), term(), term::list({1}, a("x")), term::list({1}), term::list({1, 2}), term::list({2}),
      term::bitstring("\x80", 1), term::binary("\x80"), term::binary(std::string_view("\x80\x00", 2)), term::binary("\x81"),
  };
  for (std::size_t i = 0; i + 1 < ordered.size(); ++i) {
    INFO(herd::to_string(ordered[i]) << " < " << herd::to_string(ordered[i + 1]));
    CHECK(ordered[i] < ordered[i + 1]);
    CHECK(ordered[i + 1] > ordered[i]);
    CHECK(ordered[i] != ordered[i + 1]);
  }
  std::vector<term> shuffled(ordered.rbegin(), ordered.rend());
  std::sort(shuffled.begin(), shuffled.end());
  CHECK(shuffled == ordered);
}

TEST_CASE("term: integers and floats compare exactly, without rounding through double") {
  // 2^53 + 1 is not a double: it is above 2^53 as a float and below 2^53 + 2.
  CHECK(term(int64_t(9007199254740993)) > term(9007199254740992.0));
  CHECK(term(int64_t(9007199254740993)) < term(9007199254740994.0));
  CHECK(big("18446744073709551617") > term(18446744073709551616.0));
  CHECK(big("18446744073709551615") < term(18446744073709551616.0));
  CHECK(big("-18446744073709551617") < term(-18446744073709551616.0));
  CHECK(term(int64_t(INT64_MAX)) < term(9223372036854775808.0));
  CHECK(term(2) > term(1.5));
  CHECK(term(-2) < term(-1.5));
}

TEST_CASE("term: equal terms hash equally, and a copy shares its node") {
  term t1 = term::tuple({a("ok"), term::list({1, 2}, a("x")), term::map({{a("k"), term::binary("v")}})});
  term t2 = term::tuple({a("ok"), term::list({1, 2}, a("x")), term::map({{a("k"), term::binary("v")}})});
  CHECK(t1 == t2);
  CHECK(t1.hash() == t2.hash());
  std::unordered_set<term> s{t1, t2, term(1), term(1.0)};
  CHECK(s.size() == 3);
  term c = t1;
  CHECK(&c.elements()[0] == &t1.elements()[0]);
}

TEST_CASE("term: printing follows Erlang's syntax") {
  using herd::to_string;
  CHECK(to_string(term::tuple({a("ok"), term::list({1, 2}, a("x"))})) == "{ok,[1,2|x]}");
  CHECK(to_string(term::pid({atom("nonode@nohost"), 12, 0, 0})) == "<0.12.0>");
  CHECK(to_string(term::pid({atom("beam@host"), 85, 1, 3})) == "<beam@host.85.1>");
  CHECK(to_string(term::map({{a("a"), 1}})) == "#{a => 1}");
  CHECK(to_string(term::binary("\x01\x02")) == "<<1,2>>");
  CHECK(to_string(term::binary("hi")) == "<<\"hi\">>");
  CHECK(to_string(term::bitstring("\x01\xe0", 3)) == "<<1,7:3>>");
  CHECK(to_string(a("Quoted atom")) == "'Quoted atom'");
  CHECK(to_string(a("it's")) == "'it\\'s'");
  CHECK(to_string(a("receive")) == "'receive'");
  CHECK(to_string(a("node@host")) == "node@host");
  CHECK(to_string(term::string("abc")) == "\"abc\"");
  CHECK(to_string(term()) == "[]");
  CHECK(to_string(term(1.0)) == "1.0");
  CHECK(to_string(term(-0.0)) == "-0.0");
  CHECK(to_string(term(0.1)) == "0.1");
  CHECK(to_string(term(1e30)) == "1.0e30");
  CHECK(to_string(term::reference({atom("nonode@nohost"), 0, 3, {1, 2, 3}})) == "#Ref<0.3.2.1>");
  CHECK(to_string(term::export_fun(atom("erlang"), atom("abs"), 1)) == "fun erlang:abs/1");
}

TEST_CASE("term: freeing a term nested a million deep does not recurse") {
  // A recursive destructor would need ~100 MB of stack here.
  term t = term(1);
  for (int i = 0; i < 1'000'000; ++i) t = term::tuple({std::move(t)});
  term l = term(1);
  for (int i = 0; i < 1'000'000; ++i) l = term::list({a("x")}, term::tuple({std::move(l)}));
  t = term();
  l = term();
  CHECK(t.is_nil());
}

TEST_CASE("term: threads make the same atoms at once and get one index each, and share terms freely") {
  constexpr int threads = 4, atoms = 500;
  std::vector<std::vector<uint32_t>> got(threads);
  term shared = term::tuple({a("shared"), term::binary("payload"), term::list({1, 2}, a("x"))});
  std::vector<std::thread> ts;
  for (int k = 0; k < threads; ++k) {
    ts.emplace_back([&, k] {
      for (int i = 0; i < atoms; ++i) {
        got[k].push_back(atom("concurrent_" + std::to_string(i)).index());
        term copy = shared;  // copies and frees race on the node's count
        (void)copy.hash();
      }
    });
  }
  for (auto& t : ts) t.join();
  for (int k = 1; k < threads; ++k) CHECK(got[k] == got[0]);
  CHECK(atom::from_index(got[0][7]).text() == "concurrent_7");
  CHECK(herd::to_string(shared) == "{shared,<<\"payload\">>,[1,2|x]}");
}
