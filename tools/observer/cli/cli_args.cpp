#include "cli_args.hpp"

#include "cli_error.hpp"
#include "humanise.hpp"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string_view>
#include <vector>

namespace observer_cli {
namespace {

// The protocol's defaults and bounds (docs/observer-protocol.md).
constexpr std::int64_t max_process_limit = 100'000;
constexpr std::int64_t max_trace_limit = 10'000;
constexpr long default_trace_timeout_ms = 60'000;

const std::set<std::string_view> value_options = {"--socket", "--sort", "--limit", "--name", "--status",
                                                  "--timeout-ms", "--purge"};

struct parsed_line {
  std::map<std::string, std::string> options;  // "--limit" -> "5"
  std::vector<std::string> positionals;        // the command first
};

parsed_line split(int argc, char** argv, invocation& inv) {
  parsed_line p;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(usage_text(), stdout);
      std::exit(0);
    }
    if (a == "--json") {
      inv.as_json = true;
      continue;
    }
    // "-3" is a (bad) number for the command to reject, not an option.
    if (a.size() > 1 && a[0] == '-' && !(a[1] >= '0' && a[1] <= '9')) {
      std::string name = a, value;
      bool inline_value = false;
      if (auto eq = a.find('='); eq != std::string::npos) {
        name = a.substr(0, eq);
        value = a.substr(eq + 1);
        inline_value = true;
      }
      if (!value_options.contains(name)) throw usage_error("unknown option '" + a + "'");
      if (!inline_value) {
        if (i + 1 >= argc) throw usage_error(name + " needs a value");
        value = argv[++i];
      }
      if (p.options.contains(name)) throw usage_error(name + " given twice");
      p.options[name] = value;
      continue;
    }
    p.positionals.push_back(a);
  }
  return p;
}

std::string pid_arg(const std::string& text) {
  auto pid = normalise_pid(text);
  if (!pid) throw usage_error("'" + text + "' is not a pid (<index.generation>, e.g. <5.0> or 5.0)");
  return *pid;
}

std::int64_t integer_arg(const std::string& flag, const std::string& text, std::int64_t lo, std::int64_t hi) {
  auto v = parse_integer(text, lo, hi);
  if (!v)
    throw usage_error(flag + ": '" + text + "' is not a number in " + std::to_string(lo) + ".." + std::to_string(hi));
  return *v;
}

void expect_positionals(const std::string& cmd, const std::vector<std::string>& args, std::size_t lo, std::size_t hi,
                        const char* shape) {
  if (args.size() < lo || args.size() > hi) throw usage_error(cmd + " takes " + shape);
}

}  // namespace

const char* usage_text() {
  return "usage: herd-observer --socket PATH COMMAND [--json]\n"
         "commands:\n"
         "  overview                      node, memory, rates, schedulers\n"
         "  processes [--sort mailbox|reductions|memory|age] [--limit N] [--name S] [--status S]\n"
         "  process PID                   one process in detail (PID as <5.0> or 5.0)\n"
         "  tree                          the supervision tree\n"
         "  listeners                     TCP listeners and their connections\n"
         "  modules                       hot-loaded modules and their versions\n"
         "  tables                        ETS-like tables: type, owner, size, memory, protection\n"
         "  nodes [NODE]                  connected nodes (distribution): traffic, queue, last heard\n"
         "  kill PID [REASON]             exit a process (default reason: kill)\n"
         "  load PATH [--purge soft|kill] load a module file (kill: kill the processes still on the\n"
         "                                version before the current one instead of refusing)\n"
         "  set_max_connections LISTENER N|infinity\n"
         "  trace PID [--limit N] [--timeout-ms MS]   stream the next N messages and signals\n"
         "  top                           full-screen live view (q quits)\n";
}

invocation parse_args(int argc, char** argv) {
  invocation inv;
  parsed_line p = split(argc, argv, inv);
  if (!p.options.contains("--socket")) throw usage_error("--socket PATH is required");
  inv.socket = p.options["--socket"];
  p.options.erase("--socket");
  if (inv.socket.empty()) throw usage_error("--socket: the path is empty");
  if (p.positionals.empty()) throw usage_error("no command given");
  inv.command = p.positionals.front();
  std::vector<std::string> args(p.positionals.begin() + 1, p.positionals.end());
  const std::string& cmd = inv.command;

  std::set<std::string> allowed;  // the command's own options
  json req = json::object();
  if (cmd == "overview" || cmd == "tree" || cmd == "listeners" || cmd == "modules" || cmd == "tables" ||
      cmd == "top") {
    expect_positionals(cmd, args, 0, 0, "no arguments");
  } else if (cmd == "processes") {
    expect_positionals(cmd, args, 0, 0, "no positional arguments (options: --sort --limit --name --status)");
    allowed = {"--sort", "--limit", "--name", "--status"};
    if (auto s = p.options.find("--sort"); s != p.options.end()) {
      static const std::set<std::string> keys = {"mailbox", "reductions", "memory", "age"};
      if (!keys.contains(s->second))
        throw usage_error("--sort: '" + s->second + "' is not one of mailbox, reductions, memory, age");
      req["sort"] = s->second;
    }
    if (auto l = p.options.find("--limit"); l != p.options.end())
      req["limit"] = integer_arg("--limit", l->second, 1, max_process_limit);
    if (auto n = p.options.find("--name"); n != p.options.end()) req["name"] = n->second;
    if (auto s = p.options.find("--status"); s != p.options.end()) {
      static const std::set<std::string> statuses = {"running", "runnable", "waiting", "hibernated", "exiting"};
      if (!statuses.contains(s->second))
        throw usage_error("--status: '" + s->second +
                          "' is not one of running, runnable, waiting, hibernated, exiting");
      req["status"] = s->second;
    }
  } else if (cmd == "nodes") {
    expect_positionals(cmd, args, 0, 1, "an optional NODE");
    if (args.size() == 1) {
      if (args[0].empty()) throw usage_error("nodes: the node name is empty");
      req["node"] = args[0];
    }
  } else if (cmd == "process") {
    expect_positionals(cmd, args, 1, 1, "one PID");
    req["pid"] = pid_arg(args[0]);
  } else if (cmd == "kill") {
    expect_positionals(cmd, args, 1, 2, "a PID and an optional REASON");
    req["pid"] = pid_arg(args[0]);
    if (args.size() == 2) {
      if (args[1].empty()) throw usage_error("kill: the reason is empty");
      req["reason"] = args[1];
    }
  } else if (cmd == "load") {
    expect_positionals(cmd, args, 1, 1, "one PATH");
    allowed = {"--purge"};
    req["path"] = args[0];
    if (auto pg = p.options.find("--purge"); pg != p.options.end()) {
      if (pg->second != "soft" && pg->second != "kill")
        throw usage_error("--purge: '" + pg->second + "' is not soft or kill");
      req["purge"] = pg->second;
    }
  } else if (cmd == "set_max_connections") {
    expect_positionals(cmd, args, 2, 2, "a LISTENER and N|infinity");
    req["listener"] = args[0];
    if (args[1] == "infinity")
      req["max"] = "infinity";
    else
      req["max"] = integer_arg("set_max_connections", args[1], 0, std::int64_t(1) << 53);
  } else if (cmd == "trace") {
    expect_positionals(cmd, args, 1, 1, "one PID");
    allowed = {"--limit", "--timeout-ms"};
    req["pid"] = pid_arg(args[0]);
    if (auto l = p.options.find("--limit"); l != p.options.end())
      req["limit"] = integer_arg("--limit", l->second, 1, max_trace_limit);
    inv.trace_timeout_ms = default_trace_timeout_ms;
    if (auto t = p.options.find("--timeout-ms"); t != p.options.end()) {
      inv.trace_timeout_ms = integer_arg("--timeout-ms", t->second, 1, 24L * 3600 * 1000);
      req["timeout_ms"] = inv.trace_timeout_ms;
    }
  } else {
    throw usage_error("unknown command '" + cmd + "'");
  }
  for (const auto& [name, value] : p.options)
    if (!allowed.contains(name)) throw usage_error(cmd + " does not take " + name);

  if (cmd != "top") {
    req["req"] = cmd;
    inv.request = std::move(req);
  }
  return inv;
}

}  // namespace observer_cli
