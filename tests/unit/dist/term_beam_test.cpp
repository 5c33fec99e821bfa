// Against a real BEAM (OTP 25's erl, run once, bounded, no distribution):
//  - terms built in C++ reach Erlang as the terms Erlang builds itself
//    (=:=), and Erlang's re-encoding is herd's bytes;
//  - tricky terms Erlang makes (pids, refs, ports, funs, a 40-key map,
//    bignums, -0.0, UTF-8 atoms) decode and re-encode to Erlang's bytes;
//  - Erlang's compressed encodings decode to the same terms;
//  - herd sorts a mixed list into the order lists:sort gives.
// Skipped (HERD_SKIP) where erl is not installed.
#include <herd/dist/term_codec.hpp>

#include "support/skip.hpp"
#include "support/subprocess.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

using herd::atom;
using herd::term;
namespace fs = std::filesystem;

namespace {

std::string find_erl() {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/bin");
  for (std::string dir; std::getline(ss, dir, ':');) {
    fs::path p = fs::path(dir) / "erl";
    if (!dir.empty() && ::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return {};
}

term a(const char* s) { return term(atom(s)); }

// The same terms, built in C++ here and in Erlang in the script below.
std::vector<term> herd_terms() {
  std::string beam_pid = std::string("\x83\x58\x77\x09", 4) + "beam@host" + std::string("\0\0\0\x55\0\0\0\x01\0\0\0\x03", 12);
  return {
      a("ok"), term(atom("h\xc3\xa9llo w\xc3\xb6rld")), term(atom("\xe6\x97\xa5\xe6\x9c\xac")), a("Quoted atom"),
      *term::parse_integer("18446744073709551616"), *term::parse_integer("-18446744073709551616"),
      *term::parse_integer("18446744073709551615"), term(INT64_MAX), term(INT64_MIN),
      term::integer(true, std::vector<uint8_t>(125, 0)), // placeholder replaced below by -2^1000
      term(0), term(255), term(256), term(-1), term(INT32_MIN), term(INT32_MAX), term(int64_t(INT32_MAX) + 1), term(int64_t(INT32_MIN) - 1),
      term(-0.0), term(0.0), term(0.1), term(1.5e300), term(-2.5e-300),
      term::list({1, 2}, a("x")), term::list({a("a")}, term::binary("b")), term::string("abc"), term(), term::list({256, 1}),
      term::map({{a("a"), term::map({{a("b"), term::list({1, 2})}})}, {term::binary("k"), term::tuple({1, 2})}}),
      term::map({{1, a("int")}, {1.0, a("float")}}), term::map({}),
      term::tuple({}), term::tuple({a("a"), term::tuple({a("b"), term::tuple({a("c")})})}),
      term::binary(""), term::binary("\x01\x02\x03"), term::binary("hello"), term::bitstring("\xa0", 4),
      *herd::binary_to_term(beam_pid),
      term::reference({atom("beam@host"), 7, 3, {1, 2, 3}}),
      term::export_fun(atom("erlang"), atom("abs"), 1),
      term::string(std::string(300, 'z')), term::list(std::vector<term>(70000, term(1))),
  };
}

const char* erlang_script = R"erl(
[InF, EchoF, OwnF, ZipF, SortF] = init:get_plain_arguments(),
{ok, In} = file:read_file(InF),
V2 = [{minor_version, 2}],
Frame = fun(Ts, Opts) -> << <<(byte_size(E)):32, E/binary>> || T <- Ts, E <- [term_to_binary(T, Opts)] >> end,
Unframe = fun U(<<>>) -> []; U(<<L:32, B:L/binary, R/binary>>) -> [B | U(R)] end,
Herd = [binary_to_term(B) || B <- Unframe(In)],
Expected = [ok, list_to_atom("h\x{e9}llo w\x{f6}rld"), list_to_atom("\x{65e5}\x{672c}"), 'Quoted atom',
  1 bsl 64, -(1 bsl 64), (1 bsl 64) - 1, 9223372036854775807, -9223372036854775808,
  -(1 bsl 1000),
  0, 255, 256, -1, -2147483648, 2147483647, 2147483648, -2147483649,
  binary_to_term(<<131,70,128,0,0,0,0,0,0,0>>), 0.0, 0.1, 1.5e300, -2.5e-300,
  [1,2|x], [a|<<"b">>], "abc", [], [256, 1],
  #{a => #{b => [1,2]}, <<"k">> => {1,2}},
  #{1 => int, 1.0 => float}, #{},
  {}, {a, {b, {c}}},
  <<>>, <<1,2,3>>, <<"hello">>, <<1:1, 2:3>>,
  binary_to_term(<<131,88,119,9,"beam@host",0,0,0,85,0,0,0,1,0,0,0,3>>),
  binary_to_term(<<131,90,0,3,119,9,"beam@host",0,0,0,7,0,0,0,1,0,0,0,2,0,0,0,3>>),
  fun erlang:abs/1,
  lists:duplicate(300, $z), lists:duplicate(70000, 1)],
Bad = [I || {I, X, Y} <- lists:zip3(lists:seq(1, length(Expected)), Herd, Expected), X =/= Y],
ok = file:write_file(EchoF, Frame(Herd, V2)),
Own = [self(), make_ref(), hd(erlang:ports()), fun erlang:abs/1, fun(X) -> X + 1 end,
  [self() | make_ref()], maps:from_list([{I, I * I} || I <- lists:seq(1, 40)]),
  #{1 => a, 1.0 => b, <<"k">> => [x|y]}, -(1 bsl 1000), 1 bsl 2000, -(1 bsl 64),
  binary_to_term(<<131,70,128,0,0,0,0,0,0,0>>), 1.0e-300, list_to_atom("\x{436}\x{436}"),
  list_to_atom(lists:duplicate(255, 16#436)),
  {lists:seq(1, 100), <<0:7>>, <<>>, "", [[]]}, erlang:make_tuple(300, x)],
ok = file:write_file(OwnF, Frame(Own, V2)),
ok = file:write_file(ZipF, Frame(Own, [{minor_version, 2}, compressed])),
Mixed = [b, 1, 1.5, <<"x">>, [], [1], {1}, #{}, self(), make_ref(), -(1 bsl 70), 1 bsl 70, a, "abc",
  [1|x], {1,2}, #{a => 1}, <<1:3>>, 2.5, 'Z', hd(erlang:ports()), fun erlang:abs/1, [1,2], {0,9}, -3.0, 0],
ok = file:write_file(SortF, Frame([Mixed, lists:sort(Mixed)], V2)),
io:format("herd terms ~w, expected ~w, mismatches ~w~n", [length(Herd), length(Expected), Bad]),
halt(0).
)erl";

std::string frame(const std::vector<term>& ts) {
  std::string out;
  for (const term& t : ts) {
    std::string b = herd::term_to_binary(t);
    uint32_t n = uint32_t(b.size());
    out += {char(n >> 24), char(n >> 16), char(n >> 8), char(n)};
    out += b;
  }
  return out;
}
std::vector<std::string> unframe(const std::string& in) {
  std::vector<std::string> out;
  for (std::size_t at = 0; at + 4 <= in.size();) {
    auto* p = reinterpret_cast<const uint8_t*>(in.data() + at);
    std::size_t n = (std::size_t(p[0]) << 24) | (p[1] << 16) | (p[2] << 8) | p[3];
    out.push_back(in.substr(at + 4, n));
    at += 4 + n;
  }
  return out;
}
std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

}  // namespace

TEST_CASE("etf against BEAM: terms round-trip byte for byte both ways, compressed terms decode, and the term order is lists:sort's") {
  std::string erl = find_erl();
  if (erl.empty()) HERD_SKIP("no erl on PATH (Erlang/OTP is not installed)");
  std::string tmpl = (fs::temp_directory_path() / "herd_term_beam_XXXXXX").string();
  REQUIRE(::mkdtemp(tmpl.data()));
  fs::path dir = tmpl;
  struct cleanup {
    fs::path d;
    ~cleanup() { std::error_code ec; fs::remove_all(d, ec); }
  } cleanup_dir{dir};

  std::vector<term> mine = herd_terms();
  std::vector<uint8_t> p1000(126, 0);
  p1000[125] = 1;  // 2^1000
  mine[9] = term::integer(true, p1000);
  { std::ofstream(dir / "in", std::ios::binary) << frame(mine); }

  herd::test::subprocess_options o;
  o.timeout = std::chrono::seconds(120);
  auto r = herd::test::run_subprocess({erl, "+S", "1:1", "+A", "0", "-noinput", "-boot", "start_clean", "-eval", erlang_script,
                                       "-extra", (dir / "in").string(), (dir / "echo").string(), (dir / "own").string(),
                                       (dir / "zip").string(), (dir / "sort").string()},
                                      o);
  INFO("erl stdout: " << r.out << "\nerl stderr: " << r.err);
  REQUIRE(r.exited());
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("herd terms " + std::to_string(mine.size()) + ", expected " + std::to_string(mine.size()) + ", mismatches []") !=
        std::string::npos);

  // herd -> BEAM -> herd: Erlang's re-encoding is herd's bytes.
  auto echo = unframe(slurp(dir / "echo"));
  REQUIRE(echo.size() == mine.size());
  for (std::size_t i = 0; i < mine.size(); ++i) {
    INFO("term " << i << ": " << herd::to_string(mine[i]));
    CHECK(echo[i] == herd::term_to_binary(mine[i]));
  }

  // BEAM -> herd -> bytes: herd re-encodes Erlang's own terms to Erlang's bytes.
  auto own = unframe(slurp(dir / "own"));
  auto zip = unframe(slurp(dir / "zip"));
  REQUIRE(own.size() == 17);
  REQUIRE(zip.size() == own.size());
  for (std::size_t i = 0; i < own.size(); ++i) {
    auto t = herd::binary_to_term(own[i]);
    INFO("Erlang's term " << i << (t ? ": " + herd::to_string(*t) : ": " + t.error().message()));
    REQUIRE(t);
    CHECK(herd::term_to_binary(*t) == own[i]);
    auto z = herd::binary_to_term(zip[i]);
    INFO("compressed: " << (z ? std::string() : z.error().message()));
    REQUIRE(z);
    CHECK(*z == *t);
  }
  CHECK(herd::binary_to_term(own[0])->is_pid());
  CHECK(herd::binary_to_term(own[1])->is_reference());
  CHECK(herd::binary_to_term(own[2])->is_port());
  CHECK(herd::binary_to_term(own[4])->is_fun());
  CHECK(herd::to_string(*herd::binary_to_term(own[3])) == "fun erlang:abs/1");
  CHECK(herd::binary_to_term(own[6])->size() == 40);
  CHECK(herd::to_string(*herd::binary_to_term(own[9])).size() == 603);  // 2^2000 has 603 digits

  // herd's term order is Erlang's.
  auto sort = unframe(slurp(dir / "sort"));
  REQUIRE(sort.size() == 2);
  term mixed = *herd::binary_to_term(sort[0]);
  term sorted = *herd::binary_to_term(sort[1]);
  std::vector<term> mine_sorted(mixed.elements().begin(), mixed.elements().end());
  std::sort(mine_sorted.begin(), mine_sorted.end());
  INFO("herd: " << herd::to_string(term::list(mine_sorted)) << "\nBEAM: " << herd::to_string(sorted));
  CHECK(term::list(mine_sorted) == sorted);
}
