// Conformance with WebSocket clients nobody here wrote: Python's
// `websockets`, Node's `ws`, Go's gorilla. Each runs as a subprocess
// (posix_spawn, bounded) against the echo server on 127.0.0.1 and prints one
// line per case (text, binary, large, fragmented, ping, close both ways,
// max_message). A client whose runtime is missing is reported as skipped.
#include "support/ws_client.hpp"
#include "support/ws_server.hpp"

#include "support/skip.hpp"
#include "support/subprocess.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

using namespace std::chrono_literals;

namespace {

bool exists(const std::string& p) { return ::access(p.c_str(), F_OK) == 0; }

herd::test::subprocess_result run_against_echo(const std::vector<std::string>& argv_without_port,
                                               std::vector<std::string> env = {}) {
  herd::test::subprocess_result r;
  herd::test::run_node(net_test::node_opts(2), [&] {
    herd::ws::options o;
    o.parser.max_message = 1 << 20;
    uint16_t port = ws_test::start_echo_server("ws_clients", o);
    REQUIRE(port != 0);
    auto argv = argv_without_port;
    argv.push_back(std::to_string(port));
    r = herd::blocking([&] { return herd::test::run_subprocess(argv, {.timeout = 120s, .env = env}); });
    (void)herd::net::stop_listener("ws_clients");
  });
  return r;
}

void check_client(const herd::test::subprocess_result& r) {
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exited());
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("FAIL") == std::string::npos);
  // Every case ran (7 lines of "ok").
  std::size_t oks = 0;
  for (std::size_t at = 0; (at = r.out.find("ok ", at)) != std::string::npos; ++at)
    if (at == 0 || r.out[at - 1] == '\n') ++oks;
  CHECK(oks == 8);
}

}  // namespace

TEST_CASE("ws conformance: Python websockets client", "[ws][clients]") {
  if (!exists(HERD_WS_PYTHON)) HERD_SKIP("no " HERD_WS_PYTHON);
  auto probe = herd::test::run_subprocess({HERD_WS_PYTHON, "-c", "import websockets"}, {.timeout = 30s});
  if (probe.exit_code != 0) HERD_SKIP("python3-websockets is not installed (tools/setup.sh installs it)");
  check_client(run_against_echo({HERD_WS_PYTHON, HERD_WS_CLIENTS "/python_client.py"}));
}

TEST_CASE("ws conformance: Node ws client", "[ws][clients]") {
  if (!exists(HERD_WS_NODE) || !exists(HERD_WS_NPM)) HERD_SKIP("no node / npm");
  std::string dir = HERD_WS_CLIENTS_BUILD "/node";
  if (!exists(dir + "/node_modules/ws/package.json")) {
    // Installed into the build tree, never the source tree.
    ::mkdir(HERD_WS_CLIENTS_BUILD, 0755);
    ::mkdir(dir.c_str(), 0755);
    auto cp = herd::test::run_subprocess({"/bin/cp", HERD_WS_CLIENTS "/node/package.json", dir + "/package.json"});
    auto npm = herd::test::run_subprocess(
        {HERD_WS_NPM, "install", "--prefix", dir, "--no-audit", "--no-fund", "--silent"}, {.timeout = 180s});
    if (!exists(dir + "/node_modules/ws/package.json"))
      HERD_SKIP("npm install of ws failed (no registry?): " + npm.err);
  }
  check_client(run_against_echo({HERD_WS_NODE, HERD_WS_CLIENTS "/node/client.js"}, {"NODE_PATH=" + dir + "/node_modules"}));
}

TEST_CASE("ws conformance: Go gorilla client", "[ws][clients]") {
  if (!exists(HERD_WS_GO)) HERD_SKIP("no go");
  if (!exists("/usr/share/gocode/src/github.com/gorilla/websocket"))
    HERD_SKIP("golang-github-gorilla-websocket-dev is not installed");
  std::string bin = HERD_WS_CLIENTS_BUILD "/gorilla_client";
  if (!exists(bin)) {
    ::mkdir(HERD_WS_CLIENTS_BUILD, 0755);
    auto b = herd::test::run_subprocess(
        {HERD_WS_GO, "build", "-o", bin, HERD_WS_CLIENTS "/go/client.go"},
        {.timeout = 300s,
         .env = {"GO111MODULE=off", "GOPATH=/usr/share/gocode", "GOCACHE=" HERD_WS_CLIENTS_BUILD "/gocache",
                 "GOFLAGS=-mod=mod", "HOME=" HERD_WS_CLIENTS_BUILD}});
    INFO(b.err);
    REQUIRE(exists(bin));
  }
  check_client(run_against_echo({bin}));
}
