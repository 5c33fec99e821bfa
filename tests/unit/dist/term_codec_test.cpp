// The external term format: every type round-trips, the bytes are BEAM's,
// old tags decode, and hostile input gets an error with its offset —
// never a crash, an unbounded allocation or a deep recursion.
#include <herd/dist/term_codec.hpp>

#include "support/node_fixture.hpp"

#include <catch2/catch.hpp>
#include <zlib.h>

#include <string>
#include <vector>

using herd::atom;
using herd::term;
using herd::term_errc;

namespace {
term a(const char* s) { return term(atom(s)); }
std::string bytes(std::initializer_list<int> bs) {
  std::string s;
  for (int b : bs) s.push_back(char(b));
  return s;
}
term decoded(const std::string& b) {
  auto t = herd::binary_to_term(b);
  INFO((t.ok() ? std::string() : t.error().message()));
  REQUIRE(t);
  return *t;
}
term_errc error_of(const std::string& b, const herd::decode_options& o = {}) {
  auto t = herd::binary_to_term(b, o);
  REQUIRE_FALSE(t);
  INFO(t.error().message());
  CHECK(t.error().offset <= b.size());
  return t.code();
}
herd::erl_ref ref3() { return {atom("beam@host"), 7, 3, {1, 2, 3}}; }

std::vector<term> every_type() {
  std::string big_mag(300, '\x7f');
  return {
      term(0), term(255), term(256), term(-1), term(INT32_MIN), term(INT32_MAX), term(int64_t(INT32_MAX) + 1),
      term(INT64_MIN), term(INT64_MAX), term(uint64_t(UINT64_MAX)), *term::parse_integer("-18446744073709551616"),
      term::integer(true, std::span(reinterpret_cast<const uint8_t*>(big_mag.data()), big_mag.size())),
      term(0.0), term(-0.0), term(1.5e300), term(-2.5e-300),
      a(""), a("ok"), a("héllo wörld"), term(atom(std::string(255, 'x'))), term(atom(std::string(200, 'x') + "жжжжжжжжжжжжжжжжжжжжжжжжжжжжжж")),
      term(), term::list({1, 2, 3}), term::list({1, 2}, a("tail")), term::list({300, -1}), term::list({a("x"), term::list({})}),
      term::string(std::string(70000, 'a')), term::string("日本"),
      term::tuple({}), term::tuple({a("ok"), 1}), term::tuple(std::vector<term>(300, a("e"))),
      term::map({}), term::map({{a("a"), 1}, {term::binary("k"), term::map({{1, 2}})}}),
      term::binary(""), term::binary("hello"), term::bitstring("\xab\xc0", 2), term::bitstring("\xff", 8),
      term::pid({atom("beam@host"), 85, 1, 3}), term::port({atom("beam@host"), 5, 3}), term::port({atom("beam@host"), uint64_t(1) << 40, 3}),
      term::reference(ref3()), term::reference({atom("beam@host"), 7, 5, {1, 2, 3, 4, 5}}),
      term::export_fun(atom("erlang"), atom("abs"), 1),
  };
}
}  // namespace

TEST_CASE("etf: every type round-trips through encode and decode") {
  for (const term& t : every_type()) {
    INFO(herd::to_string(t));
    std::string b = herd::term_to_binary(t);
    CHECK(decoded(b) == t);
    CHECK(herd::term_to_binary(decoded(b)) == b);
  }
}

TEST_CASE("etf: the bytes are BEAM's (term_to_binary with minor_version 2)") {
  CHECK(herd::term_to_binary(a("abc")) == bytes({131, 119, 3, 97, 98, 99}));
  CHECK(herd::term_to_binary(term(1)) == bytes({131, 97, 1}));
  CHECK(herd::term_to_binary(term(-1)) == bytes({131, 98, 255, 255, 255, 255}));
  CHECK(herd::term_to_binary(term(int64_t(1) << 32)) == bytes({131, 110, 5, 0, 0, 0, 0, 0, 1}));
  CHECK(herd::term_to_binary(term::list({1, 2})) == bytes({131, 107, 0, 2, 1, 2}));
  CHECK(herd::term_to_binary(term::list({1}, a("x"))) == bytes({131, 108, 0, 0, 0, 1, 97, 1, 119, 1, 120}));
  CHECK(herd::term_to_binary(term(1.0)) == bytes({131, 70, 63, 240, 0, 0, 0, 0, 0, 0}));
  CHECK(herd::term_to_binary(term::bitstring("\xe0", 3)) == bytes({131, 77, 0, 0, 0, 1, 3, 0xe0}));
}

TEST_CASE("etf: encode_term and decode_term work on back-to-back terms without the version byte") {
  std::string b;
  herd::encode_term(term::tuple({2, a("ctl")}), b);
  herd::encode_term(term::binary("payload"), b);
  std::size_t at = 0;
  auto c = herd::decode_term(b, at);
  REQUIRE(c);
  auto p = herd::decode_term(b, at);
  REQUIRE(p);
  CHECK(at == b.size());
  CHECK(*c == term::tuple({2, a("ctl")}));
  CHECK(*p == term::binary("payload"));
  std::size_t end = b.size();
  CHECK_FALSE(herd::decode_term(b, end));
  CHECK(end == b.size());
}

TEST_CASE("etf: the older tags decode (ATOM_EXT, PID_EXT, NEW_REFERENCE_EXT, REFERENCE_EXT, PORT_EXT, FLOAT_EXT)") {
  CHECK(decoded(bytes({131, 100, 0, 2, 111, 107})) == a("ok"));
  CHECK(decoded(bytes({131, 115, 2, 111, 107})) == a("ok"));
  CHECK(decoded(bytes({131, 100, 0, 1, 0xe9})) == a("é"));  // Latin-1
  term pid = decoded(bytes({131, 103, 100, 0, 1, 110, 0, 0, 0, 5, 0, 0, 0, 1, 2}));
  CHECK(pid.as_pid() == herd::erl_pid{atom("n"), 5, 1, 2});
  term ref = decoded(bytes({131, 114, 0, 2, 100, 0, 1, 110, 3, 0, 0, 0, 1, 0, 0, 0, 2}));
  CHECK(ref.as_reference() == herd::erl_ref{atom("n"), 3, 2, {1, 2}});
  term oldref = decoded(bytes({131, 101, 100, 0, 1, 110, 0, 0, 0, 9, 1}));
  CHECK(oldref.as_reference() == herd::erl_ref{atom("n"), 1, 1, {9}});
  term port = decoded(bytes({131, 102, 100, 0, 1, 110, 0, 0, 0, 7, 2}));
  CHECK(port.as_port() == herd::erl_port{atom("n"), 7, 2});
  std::string f = bytes({131, 99});
  std::string text = "1.50000000000000000000e+00";
  text.resize(31, '\0');
  CHECK(decoded(f + text) == term(1.5));
}

TEST_CASE("etf: COMPRESSED terms inflate, and a false size claim or a broken stream is an error") {
  std::string inner = herd::term_to_binary(term::list(std::vector<term>(1000, a("same")))).substr(1);
  uLongf zlen = compressBound(uLong(inner.size()));
  std::string z(zlen, '\0');
  REQUIRE(compress(reinterpret_cast<Bytef*>(z.data()), &zlen, reinterpret_cast<const Bytef*>(inner.data()), uLong(inner.size())) == Z_OK);
  z.resize(zlen);
  auto framed = [&](uint32_t size) {
    return bytes({131, 80, int(size >> 24), int((size >> 16) & 255), int((size >> 8) & 255), int(size & 255)}) + z;
  };
  CHECK(decoded(framed(uint32_t(inner.size()))) == term::list(std::vector<term>(1000, a("same"))));
  CHECK(error_of(framed(0xFFFFFFFF)) == term_errc::too_large);  // not even tried: past zlib's ratio
  CHECK(error_of(framed(uint32_t(inner.size() + 1))) == term_errc::zlib);
  std::string broken = framed(uint32_t(inner.size()));
  broken[10] ^= 0x55;
  CHECK_FALSE(herd::binary_to_term(broken));
  herd::decode_options small;
  small.max_size = 100;
  CHECK(error_of(framed(uint32_t(inner.size())), small) == term_errc::too_large);
}

TEST_CASE("etf: every truncation of every type is an error, never a crash") {
  for (const term& t : every_type()) {
    std::string b = herd::term_to_binary(t);
    if (b.size() > 4096) continue;  // every prefix of the 70,000-character string: quadratic
    for (std::size_t n = 0; n < b.size(); ++n) {
      auto r = herd::binary_to_term(std::string_view(b.data(), n));
      INFO(herd::to_string(t) << " cut at " << n);
      REQUIRE_FALSE(r);
      CHECK(r.error().offset <= n);
    }
  }
}

TEST_CASE("etf: a length field larger than the input is refused before anything is reserved") {
  // 4 billion list elements, tuple elements, map pairs, binary bytes, bignum digits.
  CHECK(error_of(bytes({131, 108, 255, 255, 255, 255, 106})) == term_errc::truncated);
  CHECK(error_of(bytes({131, 105, 255, 255, 255, 255, 106})) == term_errc::truncated);
  CHECK(error_of(bytes({131, 116, 127, 255, 255, 255, 106, 106})) == term_errc::truncated);
  CHECK(error_of(bytes({131, 109, 255, 255, 255, 255, 1})) == term_errc::truncated);
  CHECK(error_of(bytes({131, 111, 255, 255, 255, 255, 0, 1})) == term_errc::truncated);
  CHECK(error_of(bytes({131, 107, 255, 255, 1})) == term_errc::truncated);
  auto r = herd::binary_to_term(bytes({131, 104, 2, 97, 1, 109, 0, 0, 0, 9, 1}));
  REQUIRE_FALSE(r);
  CHECK(r.error().offset == 5);  // the binary, inside the tuple
  CHECK(r.error().message().find("truncated at byte 5") == 0);
}

TEST_CASE("etf: bad values are errors that say what was wrong") {
  CHECK(error_of("") == term_errc::truncated);
  CHECK(error_of(bytes({130, 97, 1})) == term_errc::bad_version);
  CHECK(error_of(bytes({131, 97, 1, 0})) == term_errc::trailing_bytes);
  CHECK(error_of(bytes({131, 200})) == term_errc::unknown_tag);
  CHECK(error_of(bytes({131, 82, 0})) == term_errc::unknown_tag);    // ATOM_CACHE_REF
  CHECK(error_of(bytes({131, 70, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0})) == term_errc::bad_value);  // NaN
  CHECK(error_of(bytes({131, 70, 0x7f, 0xf0, 0, 0, 0, 0, 0, 0})) == term_errc::bad_value);  // inf
  CHECK(error_of(bytes({131, 119, 1, 0xff})) == term_errc::bad_atom);
  CHECK(error_of(bytes({131, 116, 0, 0, 0, 2, 97, 1, 97, 2, 97, 1, 97, 3})) == term_errc::duplicate_key);
  CHECK(error_of(bytes({131, 77, 0, 0, 0, 1, 0, 1})) == term_errc::bad_value);  // 0 bits of a byte
  CHECK(error_of(bytes({131, 77, 0, 0, 0, 1, 9, 1})) == term_errc::bad_value);
  CHECK(error_of(bytes({131, 110, 1, 2, 1})) == term_errc::bad_value);  // sign 2
  CHECK(error_of(bytes({131, 90, 0, 6, 119, 1, 110, 0, 0, 0, 0})) == term_errc::bad_value);  // 6 words
  CHECK(error_of(bytes({131, 88, 97, 1})) == term_errc::unknown_tag);  // a pid's node must be an atom
  CHECK(error_of(bytes({131, 80, 0, 0, 0, 1})) == term_errc::truncated);  // no zlib stream at all
  CHECK(error_of(bytes({131, 104, 1, 80, 0, 0, 0, 1, 0})) == term_errc::unknown_tag);  // COMPRESSED inside
}

TEST_CASE("etf: a bignum written with high zero bytes decodes to the same integer") {
  CHECK(decoded(bytes({131, 110, 8, 0, 5, 0, 0, 0, 0, 0, 0, 0})) == term(5));
  CHECK(decoded(bytes({131, 110, 8, 1, 0, 0, 0, 0, 0, 0, 0, 128})) == term(INT64_MIN));
}

TEST_CASE("etf: nesting past max_depth is refused, and a term at the limit is safe on a 64 KiB actor stack") {
  auto nested = [](int depth) {
    std::string b = bytes({131});
    for (int i = 0; i < depth; ++i) b += bytes({108, 0, 0, 0, 1, 104, 2, 97, 1});  // [{1, ...}]
    b += bytes({106});
    for (int i = 0; i < depth; ++i) b += bytes({106});
    return b;
  };
  herd::decode_options o;
  CHECK(error_of(nested(int(o.max_depth / 2) + 1)) == term_errc::too_deep);  // two levels a round
  std::string chain = bytes({131});
  for (int i = 0; i < 100'000; ++i) chain += bytes({104, 1});
  CHECK(error_of(chain + bytes({97, 1})) == term_errc::too_deep);
  std::string deepest = nested(int(o.max_depth / 2));
  // Decode, compare, hash, print, re-encode and free it inside a process
  // whose stack is the default 64 KiB.
  bool same = false;
  std::size_t printed = 0;
  herd::test::run_node(herd::test::opts(1), [&] {
    auto t = herd::binary_to_term(deepest);
    if (!t) return;
    auto t2 = herd::binary_to_term(deepest);
    same = *t == *t2 && t->hash() == t2->hash() && herd::term_to_binary(*t) == deepest && !(*t < *t2);
    printed = herd::to_string(*t).size();
  });
  CHECK(same);
  CHECK(printed > 0);
}

TEST_CASE("etf: a hostile chain of SMALL_TUPLE_EXT headers costs heap in proportion to the input, not stack") {
  herd::decode_options o;
  o.max_depth = 1'000'000;
  std::string b = bytes({131});
  for (int i = 0; i < 200'000; ++i) b += bytes({104, 1});
  b += bytes({97, 7});
  auto t = herd::binary_to_term(b, o);
  REQUIRE(t);
  int depth = 0;
  for (const term* x = &*t; x->is_tuple(); x = &(*x)[0]) ++depth;
  CHECK(depth == 200'000);
}
