// herd's codec against erl_interface's ei: what one encodes the other reads.
#include <herd/dist/term_codec.hpp>

#include <catch2/catch.hpp>
#include <ei.h>

#include <cstring>
#include <string>

using herd::atom;
using herd::term;

TEST_CASE("etf and ei: herd decodes what ei encodes, and ei decodes what herd encodes") {
  REQUIRE(ei_init() == 0);
  ei_x_buff x;
  ei_x_new_with_version(&x);
  ei_x_encode_tuple_header(&x, 6);
  ei_x_encode_atom(&x, "push");
  ei_x_encode_binary(&x, "user42", 6);
  ei_x_encode_longlong(&x, -1234567890123LL);
  ei_x_encode_double(&x, 2.5);
  ei_x_encode_list_header(&x, 2);
  ei_x_encode_string(&x, "ab");
  ei_x_encode_ulonglong(&x, 18446744073709551615ULL);
  ei_x_encode_empty_list(&x);
  ei_x_encode_map_header(&x, 1);
  ei_x_encode_atom(&x, "k");
  ei_x_encode_boolean(&x, 1);
  auto t = herd::binary_to_term(std::string_view(x.buff, std::size_t(x.index)));
  ei_x_free(&x);
  REQUIRE(t);
  CHECK(*t == term::tuple({term(atom("push")), term::binary("user42"), term(int64_t(-1234567890123LL)), term(2.5),
                          term::list({term::string("ab"), term(uint64_t(18446744073709551615ULL))}),
                          term::map({{term(atom("k")), term(atom("true"))}})}));

  std::string b = herd::term_to_binary(*t);
  int at = 0, version = 0, arity = 0, type = 0, size = 0;
  REQUIRE(ei_decode_version(b.data(), &at, &version) == 0);
  REQUIRE(ei_decode_tuple_header(b.data(), &at, &arity) == 0);
  CHECK(arity == 6);
  char a[MAXATOMLEN_UTF8];
  REQUIRE(ei_decode_atom(b.data(), &at, a) == 0);
  CHECK(std::string(a) == "push");
  char bin[16];
  long blen = 0;
  REQUIRE(ei_decode_binary(b.data(), &at, bin, &blen) == 0);
  CHECK(std::string(bin, std::size_t(blen)) == "user42");
  long long ll = 0;
  REQUIRE(ei_decode_longlong(b.data(), &at, &ll) == 0);
  CHECK(ll == -1234567890123LL);
  double d = 0;
  REQUIRE(ei_decode_double(b.data(), &at, &d) == 0);
  CHECK(d == 2.5);
  REQUIRE(ei_decode_list_header(b.data(), &at, &arity) == 0);
  CHECK(arity == 2);
  REQUIRE(ei_get_type(b.data(), &at, &type, &size) == 0);
  CHECK(type == ERL_STRING_EXT);
  char s[8];
  REQUIRE(ei_decode_string(b.data(), &at, s) == 0);
  CHECK(std::string(s) == "ab");
  unsigned long long ull = 0;
  REQUIRE(ei_decode_ulonglong(b.data(), &at, &ull) == 0);
  CHECK(ull == 18446744073709551615ULL);
  REQUIRE(ei_decode_list_header(b.data(), &at, &arity) == 0);  // the tail
  CHECK(arity == 0);
  REQUIRE(ei_decode_map_header(b.data(), &at, &arity) == 0);
  CHECK(arity == 1);
  REQUIRE(ei_decode_atom(b.data(), &at, a) == 0);
  int flag = 0;
  REQUIRE(ei_decode_boolean(b.data(), &at, &flag) == 0);
  CHECK(flag == 1);
  CHECK(std::size_t(at) == b.size());
}
