// examples/dist_echo against a BEAM node: gen_server calls to echo and
// counter, a plain {From, T} to echo, counting, SIGTERM -> exit 0; and a bad
// option -> exit 2.
#include <herd/actors.hpp>

#include <catch2/catch.hpp>

#include <csignal>
#include <sys/wait.h>

#include "peers.hpp"
#include "support/node_fixture.hpp"
#include "support/skip.hpp"
#include "support/subprocess.hpp"

using namespace std::chrono_literals;

TEST_CASE("dist_echo answers calls and plain messages from a BEAM node, counts, and exits 0 on SIGTERM") {
  if (!herd::test::have_erl()) HERD_SKIP("erl is not installed");
  // Also with its workers spinning before they sleep (--busy-wait-us).
  const std::string busy_wait = GENERATE(as<std::string>{}, "0", "200");
  CAPTURE(busy_wait);
  std::string err, beam_out, echo_out;
  int status = -1;
  herd::test::run_node(herd::test::opts(2), [&] {
    std::string s = herd::test::unique_sname("dist_echo");
    std::string node = s + "@" + herd::test::short_host();
    herd::test::peer_process echo({HERD_DIST_ECHO, "--sname", s, "--cookie", "echo_cookie", "--workers", "2",
                                 "--busy-wait-us", busy_wait});
    if (!echo.wait_for("node " + node + "\n")) return void(err = "dist_echo did not start: " + echo.output());
    herd::test::peer_process erl(herd::test::erl_args(
        herd::test::unique_sname("beam"), "echo_cookie",
        "N = '" + node + "', T = {any, [term, 1.5], <<\"x\">>, #{a => 1}},"
        "A = gen_server:call({echo, N}, T, 30000),"
        "{echo, N} ! {self(), plain}, B = receive M -> M after 30000 -> timeout end,"
        "[{counter, N} ! {tick, I} || I <- lists:seq(1, 100)],"
        "gen_server:cast({counter, N}, hello),"
        "C = gen_server:call({counter, N}, count, 30000),"
        "ok = gen_server:call({counter, N}, reset, 30000),"
        "D = gen_server:call({counter, N}, count, 30000),"
        "io:format(\"result ~p~n\", [{A =:= T, B, C, D}]), halt()."));
    erl.wait_exit(120s);
    beam_out = erl.output();
    echo.signal(SIGTERM);
    if (!echo.wait_exit(30s, &status)) err = "dist_echo did not exit on SIGTERM";
    echo_out = echo.output();
  });
  INFO(err << "\nBEAM: " << beam_out << "\ndist_echo: " << echo_out);
  CHECK(err.empty());
  CHECK(beam_out.find("result {true,plain,101,0}") != std::string::npos);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("dist_echo refuses a bad option with a message and exit 2") {
  for (std::vector<std::string> args : {std::vector<std::string>{HERD_DIST_ECHO},
                                        {HERD_DIST_ECHO, "--sname", "x", "--bogus", "1"},
                                        {HERD_DIST_ECHO, "--sname", "x", "--workers", "zero"},
                                        {HERD_DIST_ECHO, "--sname", "bad name!"},
                                        {HERD_DIST_ECHO, "--sname", "x", "--busy-wait-us", "-1"},
                                        {HERD_DIST_ECHO, "--sname", "x", "--busy-wait-us", "10001"},
                                        {HERD_DIST_ECHO, "--sname", "x", "--busy-wait-us", "1ms"}}) {
    auto r = herd::test::run_subprocess(args);
    INFO(args.back() << ": " << r.err);
    CHECK(r.exited());
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("dist_echo:") != std::string::npos);
  }
}
