// herd::result<T, E>, the one value-or-error type of every layer: its two
// states, reading the value of an error (a bug: std::logic_error with the
// error's message), and the errors of the actors layer (herd::error for
// stop_server, modules::error for load and unload).
#include <herd/actors/error.hpp>
#include <herd/actors/module.hpp>
#include <herd/actors/result.hpp>

#include <catch2/catch.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace {

enum class toy_errc { broken, missing };
struct toy_error {
  toy_errc code;
  std::string detail{};
  std::string message() const { return std::string(code == toy_errc::broken ? "broken" : "missing") + ": " + detail; }
};
template <class T = herd::ok>
using toy_result = herd::result<T, toy_error>;

toy_result<int> parse(const std::string& s) {
  if (s.empty()) return toy_errc::missing;
  if (s == "x") return toy_error{toy_errc::broken, "not a number: x"};
  return std::stoi(s);
}

}  // namespace

TEST_CASE("a result holds a value or an error - ok, bool, value, star, arrow, error and code say which", "[result]") {
  auto good = parse("42");
  CHECK(good.ok());
  CHECK(static_cast<bool>(good));
  CHECK(good.value() == 42);
  CHECK(*good == 42);
  *good = 7;  // the non-const value is the caller's
  CHECK(good.value() == 7);

  auto bad = parse("x");
  CHECK_FALSE(bad.ok());
  CHECK_FALSE(static_cast<bool>(bad));
  CHECK(bad.code() == toy_errc::broken);
  CHECK(bad.error().detail == "not a number: x");

  auto none = parse("");  // made from the bare code
  CHECK(none.code() == toy_errc::missing);
  CHECK(none.error().detail.empty());

  static_assert(!std::is_convertible_v<toy_result<int>, bool>, "operator bool is explicit");
}

TEST_CASE("reading the value of an error throws std::logic_error with the error's message", "[result]") {
  const auto bad = parse("x");
  REQUIRE_THROWS_AS(bad.value(), std::logic_error);
  CHECK_THROWS_WITH(bad.value(), Catch::Contains("broken: not a number: x"));
  CHECK_THROWS_WITH(*bad, Catch::Contains("broken: not a number: x"));
  auto moved = parse("");
  CHECK_THROWS_WITH(std::move(moved).value(), Catch::Contains("missing"));
  struct point {
    int x;
  };
  herd::result<point, toy_error> p = toy_errc::missing;
  CHECK_THROWS_AS(p->x, std::logic_error);
}

TEST_CASE("result<> is herd::ok by default, and a move-only value moves out of an rvalue result", "[result]") {
  toy_result<> done;  // default: a success with nothing in it
  CHECK(done.ok());
  CHECK(*done == herd::ok{});
  static_assert(std::is_same_v<toy_result<>::value_type, herd::ok>);

  herd::result<std::unique_ptr<int>, toy_error> owned = std::make_unique<int>(5);
  std::unique_ptr<int> out = std::move(owned).value();
  REQUIRE(out);
  CHECK(*out == 5);

  herd::result<std::string, toy_error> s = std::string("abc");
  CHECK(s->size() == 3);  // -> reaches the value's members
  s->push_back('d');
  CHECK(*s == "abcd");
}

TEST_CASE("the actors layer's errors say their code and what was being done", "[result]") {
  herd::result<int, herd::error> late = herd::error{herd::errc::timeout, "stop_server <0.9.0>: not exited within 30 ms"};
  CHECK(late.code() == herd::errc::timeout);
  CHECK(late.error().message() == "timeout: stop_server <0.9.0>: not exited within 30 ms");
  CHECK_THROWS_WITH(late.value(), Catch::Contains("timeout: stop_server <0.9.0>"));

  herd::modules::result<herd::modules::loaded> refused =
      herd::modules::error{herd::modules::errc::file_missing, "greeter.so: no such file"};
  CHECK(refused.code() == herd::modules::errc::file_missing);
  CHECK(refused.error().message() == "file_missing: greeter.so: no such file");
  CHECK(std::string(herd::modules::to_string(herd::modules::errc::old_version_in_use)) == "old_version_in_use");
  herd::modules::result<> bare = herd::modules::errc::no_module_dir;
  CHECK(bare.error().message() == "no_module_dir");
}
