// Death tests, in a subprocess (posix_spawn, never fork): a process that overflows its stack —
// by deep recursion, or by one 64 KiB local array on a 64 KiB stack, compiled with
// -fstack-clash-protection — kills the program with SIGABRT after one report on stderr naming
// the process: pid, registered name, stack size and the faulting address inside the guard.
#include <herd/runtime/sanitizers.hpp>
#include "support/subprocess.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

#if HERD_ASAN
constexpr bool asan = true;
#else
constexpr bool asan = false;
#endif

herd::test::subprocess_result run_overflow_actor(const std::string& mode) {
  herd::test::subprocess_options options;
  options.timeout = std::chrono::seconds(60);
  // ASan must leave SIGSEGV to herd's handler (and not report the abort as leaks).
  if (asan) options.env.push_back("ASAN_OPTIONS=handle_segv=0:detect_leaks=0");
  return herd::test::run_subprocess({HERD_OVERFLOW_ACTOR, mode}, options);
}

std::string value_after(const std::string& text, const std::string& key) {
  const std::size_t at = text.find(key);
  if (at == std::string::npos) return {};
  const std::size_t b = at + key.size();
  return text.substr(b, text.find_first_of(" \n", b) - b);
}

uintptr_t hex_after(const std::string& text, const std::string& marker) {
  const std::size_t at = text.find(marker);
  if (at == std::string::npos) return 0;
  return std::strtoull(text.c_str() + at + marker.size(), nullptr, 16);
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

void check_overflow_death(const herd::test::subprocess_result& r) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err << "\nspawn error: " << r.spawn_error
                  << "\nexit code: " << r.exit_code << " signal: " << r.signal);
  REQUIRE(r.started);
  CHECK_FALSE(r.timed_out);
  CHECK(r.signal == SIGABRT);
  const std::string pid = value_after(r.out, "pid=");
  const std::string stack = value_after(r.out, "stack=");
  REQUIRE(pid.size() >= 5);
  CHECK(pid.front() == '<');
  CHECK(pid.back() == '>');
  CHECK(r.err.find("stack overflow") != std::string::npos);
  CHECK(r.err.find("name=overflower") != std::string::npos);
  CHECK(count(r.err, "herd: stack overflow") == 1);
  // The report format of runtime/src/context/overflow_handler.cpp.
  const std::string head = "herd: stack overflow in actor " + pid + " name=overflower: stack " + stack +
                           " bytes, fault at 0x";
  CHECK(r.err.find(head) != std::string::npos);
  // The faulting address lies in the guard the report names.
  const uintptr_t fault = hex_after(r.err, "fault at ");
  const uintptr_t lo = hex_after(r.err, ", guard ");
  const std::size_t dash = r.err.find('-', r.err.find(", guard "));
  const uintptr_t hi = dash == std::string::npos ? 0 : std::strtoull(r.err.c_str() + dash + 1, nullptr, 16);
  CHECK(lo != 0);
  CHECK(lo < hi);
  CHECK(fault >= lo);
  CHECK(fault < hi);
}

}  // namespace

TEST_CASE("death: deep recursion in a process is reported as its stack overflow, then SIGABRT", "[death]") {
  check_overflow_death(run_overflow_actor("recursion"));
}

TEST_CASE("death: a 64 KiB local array (stack-clash protected) hits the guard, reported, then SIGABRT",
          "[death]") {
  check_overflow_death(run_overflow_actor("array"));
}

TEST_CASE("death: the overflow program without an overflow exits cleanly", "[death]") {
  const auto r = run_overflow_actor("none");
  INFO("stdout: " << r.out << "\nstderr: " << r.err << "\nspawn error: " << r.spawn_error);
  REQUIRE(r.started);
  CHECK(r.exited());
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("stack overflow") == std::string::npos);
  CHECK(r.out.find("pid=<") != std::string::npos);
}
