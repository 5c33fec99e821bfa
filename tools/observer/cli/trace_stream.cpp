#include "trace_stream.hpp"

#include "cli_error.hpp"
#include "humanise.hpp"
#include "terminal_text.hpp"

#include <cstdio>

namespace observer_cli {
namespace {

std::string event_line(const json& e) {
  // at_ms stays exact: events a millisecond apart must not print alike.
  std::string out = std::to_string(e.at("at_ms").get<long long>()) + " ms";
  out = std::string(out.size() < 12 ? 12 - out.size() : 0, ' ') + out + "  ";
  std::string kind = terminal_safe(e.at("kind").get<std::string>());
  out += kind + std::string(kind.size() < 8 ? 8 - kind.size() : 1, ' ') + e.at("type").get<std::string>();
  // The rest of the event's fields, as they come: from, reason, bytes...
  for (const auto& [k, v] : e.items()) {
    if (k == "at_ms" || k == "kind" || k == "type") continue;
    if (k == "bytes")
      out += "  " + human_bytes(v.get<double>());
    else
      out += "  " + k + " " + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return terminal_safe(out);  // the node's keys and values: terminal_text.hpp
}

}  // namespace

int run_trace(node_connection& node, const invocation& inv) {
  long id = node.send(inv.request);
  json first = node.read_reply(id, clock_type::now() + reply_timeout);
  if (!first.contains("result") || !first["result"].is_object())
    throw node_failure("malformed reply from the node at " + node.path() + ": no \"result\" object in the trace's first line");
  const json& r = first["result"];
  if (inv.as_json)
    std::printf("%s\n", json_text(r).c_str());
  else
    std::printf("tracing %s (at most %lld events)\n",
                terminal_safe(r.at("tracing").get<std::string>()).c_str(), r.at("limit").get<long long>());
  std::fflush(stdout);
  // The node ends a trace by itself after timeout_ms; past that, silence
  // means the node is hung.
  auto deadline = clock_type::now() + std::chrono::milliseconds(inv.trace_timeout_ms) + reply_timeout;
  for (;;) {
    json line = node.read_reply(id, deadline);
    if (line.contains("event") && line["event"].is_object()) {
      if (inv.as_json)
        std::printf("%s\n", json_text(json{{"event", line["event"]}}).c_str());
      else
        std::printf("%s\n", event_line(line["event"]).c_str());
    } else if (line.contains("done") && line["done"].is_object()) {
      const json& d = line["done"];
      if (inv.as_json)
        std::printf("%s\n", json_text(json{{"done", d}}).c_str());
      else
        std::printf("done: %lld events (%s)\n", d.at("events").get<long long>(),
                    terminal_safe(d.at("why").get<std::string>()).c_str());
      std::fflush(stdout);
      return 0;
    } else {
      throw node_failure("malformed reply from the node at " + node.path() + ": a trace line with neither event nor done");
    }
    std::fflush(stdout);
  }
}

}  // namespace observer_cli
