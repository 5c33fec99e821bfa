// herd-observer: the command-line client of a node's observer socket.
//
//   herd-observer --socket PATH COMMAND [ARGS] [--json]
//
// Design
// - A plain client: it speaks docs/observer-protocol.md (version 1) and links
//   no herd library, so it runs against any node, of any build.
// - One connection per run. A one-shot command sends one request (id 1),
//   waits at most 5 s for its line, and prints the `result` object either
//   as a table (command_views.cpp) or, with --json, as one line of JSON for
//   scripts. `trace` prints each event line as it arrives until `done`
//   (trace_stream.cpp). `top` keeps the connection and asks again every
//   second (top/top_loop.cpp).
// - Exit codes: 0 ok; 1 when there is no node at the path, it went away,
//   did not answer in time, answered with something that is not a reply of
//   the protocol, or answered "ok":false (its code and message are printed);
//   2 for a wrong command line (with the usage). Every failure is one line
//   on stderr, "herd-observer: " and what went wrong.
// - What the node sends is untrusted text: every human-readable line is
//   escaped (terminal_text.hpp), --json is printed ASCII-only.
// - Arguments are checked against the protocol's bounds before connecting:
//   a typo never reaches the node, and is exit 2 rather than the node's
//   bad_request (exit 1).
#include "cli_args.hpp"
#include "cli_error.hpp"
#include "command_views.hpp"
#include "node_connection.hpp"
#include "terminal_text.hpp"
#include "top/top_loop.hpp"
#include "trace_stream.hpp"

#include <csignal>
#include <cstdio>

namespace {

using namespace observer_cli;

int run(const invocation& inv) {
  if (inv.command == "top") return run_top(inv);
  node_connection node(inv.socket);
  if (inv.command == "trace") return run_trace(node, inv);
  json result = node.call(inv.request);
  // Render before printing anything: a malformed result prints no half-table.
  // The views escape what the node sent; terminal_safe_lines is the backstop.
  std::string text = inv.as_json ? json_text(result) + "\n" : terminal_safe_lines(render_result(inv.command, result));
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // A closed stdout (herd-observer ... | head) ends the run quietly.
  std::signal(SIGPIPE, SIG_DFL);
  invocation inv;
  try {
    inv = parse_args(argc, argv);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "herd-observer: %s\n%s", terminal_safe(e.what()).c_str(), usage_text());
    return 2;
  }
  try {
    int code = run(inv);
    return std::fflush(stdout) == 0 ? code : 1;
  } catch (const usage_error& e) {
    std::fprintf(stderr, "herd-observer: %s\n", terminal_safe(e.what()).c_str());
    return 2;
  } catch (const node_failure& e) {
    // The node's error message, or a raw line it sent, is quoted: escaped.
    std::fprintf(stderr, "herd-observer: %s\n", terminal_safe(e.what()).c_str());
    return 1;
  } catch (const json::exception& e) {
    // A reply that parsed but lacks a field the command shows, or has it
    // with another type.
    std::fprintf(stderr, "herd-observer: malformed reply from the node at %s: %s\n", terminal_safe(inv.socket).c_str(),
                 terminal_safe(e.what()).c_str());
    return 1;
  }
}
