#include "command_views.hpp"

#include "humanise.hpp"
#include "terminal_text.hpp"
#include "text_table.hpp"

namespace observer_cli {
namespace {

using align = text_table::align;

double num(const json& o, const char* key) { return o.at(key).get<double>(); }
// Every string the node sends is shown through terminal_safe (terminal_text.hpp).
std::string str(const json& o, const char* key) { return terminal_safe(o.at(key).get<std::string>()); }
std::string integer(const json& o, const char* key) { return std::to_string(o.at(key).get<long long>()); }
// For a field a node older than this CLI may not send.
std::string integer_or_dash(const json& o, const char* key) { return o.contains(key) ? integer(o, key) : "-"; }

// A key/value block: keys padded to one column.
class key_values {
 public:
  void add(std::string key, const std::string& value) { rows_.emplace_back(std::move(key), terminal_safe(value)); }
  std::string render() const {
    std::size_t w = 0;
    for (const auto& r : rows_) w = std::max(w, r.first.size());
    std::string out;
    for (const auto& [k, v] : rows_) out += fit(k, w + 2) + v + "\n";
    return out;
  }

 private:
  std::vector<std::pair<std::string, std::string>> rows_;
};

std::string pid_list(const json& pids) {
  if (pids.empty()) return "-";
  std::string out;
  // Pids are strings; anything else a monitor may name is shown as its JSON.
  for (const auto& p : pids) {
    if (!out.empty()) out += ' ';
    out += terminal_safe(p.is_string() ? p.get<std::string>() : p.dump());
  }
  return out;
}

std::string render_overview(const json& r) {
  const json& node = r.at("node");
  const json& mem = r.at("memory");
  const json& rates = r.at("rates");
  key_values kv;
  kv.add("node", "os pid " + integer(node, "os_pid") + ", up " + human_duration_ms(num(node, "uptime_ms")) +
                     ", herd " + str(node, "herd_version") + ", " + integer(node, "workers") + " workers");
  kv.add("actors", integer(r, "actors"));
  kv.add("memory", "rss " + human_bytes(num(mem, "rss_bytes")) + ", mimalloc " +
                       human_bytes(num(mem, "mimalloc_committed_bytes")) + " committed / " +
                       human_bytes(num(mem, "mimalloc_peak_committed_bytes")) + " at peak");
  kv.add("stacks", integer(mem, "stacks_in_use") + " in use, " + integer(mem, "stacks_carved") + " carved");
  kv.add("rates", human_count(num(rates, "messages_per_s")) + " messages/s, " +
                      human_count(num(rates, "switches_per_s")) + " switches/s, " +
                      human_count(num(rates, "spawns_per_s")) + " spawns/s");
  text_table workers({{"WORKER", align::right},
                      {"UTIL", align::right},
                      {"RUN QUEUE", align::right},
                      {"STEALS", align::right},
                      {"PARKS", align::right},
                      {"SWITCHES", align::right},
                      {"TIMERS", align::right},
                      {"SENDS BATCHED", align::right},
                      {"FLUSHES", align::right}});
  for (const auto& w : r.at("workers"))
    workers.add_row({integer(w, "id"), human_percent(num(w, "utilization")), integer(w, "run_queue"),
                     integer(w, "steals"), integer(w, "parks"), integer(w, "switches"), integer(w, "timers"),
                     integer_or_dash(w, "sends_batched"), integer_or_dash(w, "send_flushes")});
  std::string out = kv.render() + "\n" + workers.render() + "\n";
  const json& long_running = r.at("long_running");
  if (long_running.empty()) return out + "no long-running actors\n";
  text_table lr({{"LONG-RUNNING"}, {"RAN FOR", align::right}, {"AGO", align::right}});
  for (const auto& l : long_running)
    lr.add_row({str(l, "pid"), human_duration_ms(num(l, "duration_ms")), human_duration_ms(num(l, "ago_ms"))});
  return out + lr.render();
}

std::string render_processes(const json& r) {
  const json& list = r.at("processes");
  std::string out = integer(r, "total") + " processes, " + integer(r, "matched") + " matched, " +
                    std::to_string(list.size()) + " shown\n";
  if (list.empty()) return out;
  std::vector<text_table::column> columns = {{"PID"},
                                              {"NAME OR INITIAL CALL"},
                                              {"KIND"},
                                              {"STATUS"},
                                              {"MAILBOX", align::right},
                                              {"REDUCTIONS", align::right},
                                              {"MEMORY", align::right},
                                              {"AGE", align::right}};
  // PROTOCOL and OUT QUEUE (frames / bytes) only when a shown process said
  // what it speaks (older nodes send no "protocol"): the table is unchanged
  // otherwise.
  bool protocols = false;
  for (const auto& p : list) protocols = protocols || (p.contains("protocol") && p.at("protocol").is_string());
  if (protocols) {
    columns.push_back({"PROTOCOL"});
    columns.push_back({"OUT QUEUE", align::right});
  }
  text_table t(std::move(columns));
  for (const auto& p : list) {
    std::vector<std::string> row = {str(p, "pid"), name_or_call(p), kind_or_dash(p), str(p, "status"),
                                    integer(p, "mailbox"), integer(p, "reductions"), human_bytes(num(p, "memory")),
                                    human_duration_ms(num(p, "age_ms"))};
    if (protocols) {
      bool has = p.contains("protocol") && p.at("protocol").is_string();
      row.push_back(has ? str(p, "protocol") : "-");
      row.push_back(has ? integer(p, "out_frames") + " / " + human_bytes(num(p, "out_bytes")) : "-");
    }
    t.add_row(std::move(row));
  }
  return out + "\n" + t.render();
}

void render_tree_node(const json& n, const std::string& prefix, bool last, bool root, std::string& out) {
  std::string label;
  if (n.contains("id") && !n["id"].is_null())
    label = terminal_safe(n["id"].is_string() ? n["id"].get<std::string>() : n["id"].dump());
  if (n.contains("name") && n["name"].is_string()) label = label.empty() ? str(n, "name") : label + " (" + str(n, "name") + ")";
  if (!label.empty()) label += ' ';
  label += str(n, "pid");
  std::string detail = str(n, "kind");
  if (n.contains("strategy")) detail.append(" ").append(str(n, "strategy"));
  if (n.contains("intensity") && n.contains("period_ms"))
    detail.append(", at most ").append(integer(n, "intensity")).append(" restarts in ").append(
        human_duration_ms(num(n, "period_ms")));
  if (n.contains("restart")) detail.append(", ").append(str(n, "restart"));
  if (n.contains("connections_total")) detail.append(", ").append(integer(n, "connections_total")).append(" connections");
  if (n.contains("busy") && n["busy"] == true) detail.append(", busy");
  out += prefix + (root ? "" : last ? "`-- " : "|-- ") + label + "  " + detail + "\n";
  std::string child_prefix = prefix + (root ? "" : last ? "    " : "|   ");
  const json empty = json::array();
  const json& children = n.contains("children") ? n["children"] : empty;
  // A conns_sup's connections (listed after its children: it has none).
  const json& conns = n.contains("connections") && n["connections"].is_array() ? n["connections"] : empty;
  long long unlisted = 0;
  if (n.contains("connections_total") && n["connections_total"].is_number_integer())
    unlisted = n["connections_total"].get<long long>() - static_cast<long long>(conns.size());
  bool more = n.contains("more") && n["more"].get<long long>() > 0;
  for (std::size_t i = 0; i < children.size(); ++i)
    render_tree_node(children[i], child_prefix, i + 1 == children.size() && conns.empty() && !more, false, out);
  for (std::size_t i = 0; i < conns.size(); ++i) {
    const json& c = conns[i];
    bool end = i + 1 == conns.size() && unlisted <= 0;
    out += child_prefix + (end ? "`-- " : "|-- ") + str(c, "pid") + "  connection " + str(c, "peer") + " " +
           str(c, "tcp_state") + ", send queue " + human_bytes(num(c, "send_queue")) + ", receive queue " +
           human_bytes(num(c, "recv_queue")) + "\n";
  }
  if (unlisted > 0) out += child_prefix + "`-- ... " + std::to_string(unlisted) + " more connections\n";
  if (more) out += child_prefix + "`-- ... " + integer(n, "more") + " more\n";
}

std::string render_tree(const json& r) {
  const json& roots = r.at("roots");
  if (roots.empty()) return "no supervisors\n";
  std::string out;
  for (const auto& root : roots) render_tree_node(root, "", true, true, out);
  return out;
}

std::string render_listeners(const json& r) {
  const json& list = r.at("listeners");
  if (list.empty()) return "no listeners\n";
  text_table t({{"NAME"},
                {"ADDRESS"},
                {"CONNS", align::right},
                {"MAX", align::right},
                {"ACCEPTORS", align::right},
                {"ACCEPTS", align::right},
                {"REFUSALS", align::right},
                {"DROPS", align::right},
                {"STATE"},
                {"SUPERVISOR"}});
  for (const auto& l : list) {
    const json& max = l.at("max_connections");
    std::string state = l.at("draining").get<bool>() ? "draining" : l.at("suspended").get<bool>() ? "suspended" : "accepting";
    t.add_row({str(l, "name"), str(l, "address"), integer(l, "connections"),
               max.is_string() ? terminal_safe(max.get<std::string>()) : std::to_string(max.get<long long>()), integer(l, "acceptors"),
               integer(l, "accepts"), integer(l, "refusals"), integer_or_dash(l, "listen_drops"), state, text_or_dash(l.at("supervisor"))});
  }
  return t.render();
}

std::string render_tables(const json& r) {
  const json& list = r.at("tables");
  if (list.empty()) return "no tables\n";
  text_table t({{"ID", align::right},
                {"NAME"},
                {"TYPE"},
                {"PROTECTION"},
                {"OWNER"},
                {"HEIR"},
                {"SIZE", align::right},
                {"MEMORY", align::right},
                {"KEY -> VALUE"}});
  for (const auto& x : list)
    t.add_row({integer(x, "id"), text_or_dash(x.at("name")), str(x, "type"), str(x, "protection"),
               text_or_dash(x.at("owner")), text_or_dash(x.at("heir")), integer(x, "size"),
               human_bytes(num(x, "memory")), str(x, "key_type") + " -> " + str(x, "value_type")});
  return t.render();
}

std::string render_nodes(const json& r) {
  const json& self = r.at("node");
  std::string head = self.is_null() ? "distribution is not running\n" : "this node: " + text_or_dash(self) + "\n";
  const json& list = r.at("nodes");
  if (list.empty()) return head + (self.is_null() ? "" : "no connected nodes\n");
  text_table t({{"NODE"},
                {"STATE"},
                {"IN", align::right},
                {"OUT", align::right},
                {"MSGS IN", align::right},
                {"MSGS OUT", align::right},
                {"QUEUED", align::right},
                {"LAST HEARD", align::right},
                {"TICKS MISSED", align::right}});
  for (const auto& n : list) {
    const json& last = n.at("last_received_ms");
    t.add_row({str(n, "name"), n.at("up").get<bool>() ? "up" : "connecting", human_bytes(num(n, "bytes_in")),
               human_bytes(num(n, "bytes_out")), integer(n, "messages_in"), integer(n, "messages_out"),
               human_bytes(num(n, "queued_bytes")) + " / " + integer(n, "queued_frames") + " msgs",
               last.is_null() ? "-" : human_duration_ms(last.get<double>()) + " ago", integer(n, "ticks_missed")});
  }
  return head + t.render();
}

std::string render_modules(const json& r) {
  const json& list = r.at("modules");
  if (list.empty()) return "no modules loaded\n";
  text_table t({{"MODULE"}, {"CURRENT"}, {"ACTORS", align::right}, {"OLD"}, {"OLD ACTORS", align::right}, {"PATH"}});
  for (const auto& m : list) {
    const json& cur = m.at("current");
    const json& old = m.at("old");
    t.add_row({str(m, "name"), str(cur, "version"), integer(cur, "actors"), old.is_null() ? "-" : str(old, "version"),
               old.is_null() ? "-" : integer(old, "actors"), str(cur, "path")});
  }
  return t.render();
}

}  // namespace

std::string text_or_dash(const json& v) { return v.is_null() ? "-" : terminal_safe(v.get<std::string>()); }

std::string name_or_call(const json& p) {
  const json& name = p.at("name");
  if (name.is_string()) return terminal_safe(name.get<std::string>());
  // A node older than this CLI sends no initial_call.
  if (p.contains("initial_call") && p.at("initial_call").is_string())
    return terminal_safe(p.at("initial_call").get<std::string>());
  return "-";
}

std::string kind_or_dash(const json& p) { return p.contains("kind") ? str(p, "kind") : "-"; }

std::string render_process(const json& p) {
  key_values kv;
  kv.add("pid", str(p, "pid"));
  kv.add("name", text_or_dash(p.at("name")));
  if (p.contains("initial_call")) kv.add("initial call", text_or_dash(p.at("initial_call")));
  if (p.contains("kind")) kv.add("kind", str(p, "kind"));
  kv.add("status", str(p, "status") + (p.at("hibernated").get<bool>() ? " (hibernated)" : ""));
  if (p.contains("protocol") && p.at("protocol").is_string())
    kv.add("protocol", str(p, "protocol") + " (out queue: " + integer(p, "out_frames") + " frames, " +
                           human_bytes(num(p, "out_bytes")) + ")");
  kv.add("mailbox", integer(p, "mailbox") + " messages, " + human_bytes(num(p, "mailbox_bytes")));
  kv.add("reductions", integer(p, "reductions"));
  const json& stack = p.at("stack");
  kv.add("memory", human_bytes(num(p, "memory")) + " (stack: " + human_bytes(num(stack, "touched")) + " touched of " +
                       human_bytes(num(stack, "size")) + ")");
  kv.add("trap_exit", p.at("trap_exit").get<bool>() ? "true" : "false");
  kv.add("parent", text_or_dash(p.at("parent")));
  kv.add("supervisor", text_or_dash(p.at("supervisor")));
  const json& module = p.at("module");
  kv.add("module", module.is_null() ? "-" : str(module, "name") + " " + str(module, "version"));
  kv.add("last ran", human_duration_ms(num(p, "last_ran_ms_ago")) + " ago");
  kv.add("age", human_duration_ms(num(p, "age_ms")));
  if (str(p, "relations") == "busy") {
    kv.add("links", "? (the process did not answer within 100 ms)");
  } else {
    kv.add("links", pid_list(p.at("links")));
    kv.add("monitors", pid_list(p.at("monitors")));
    kv.add("monitored by", pid_list(p.at("monitored_by")));
  }
  return kv.render();
}

std::string render_kill(const json& r) {
  std::string sent = str(r, "pid") + " (reason: " + str(r, "reason") + ")";
  // A node older than this CLI answers once the signal is sent, saying no more.
  if (!r.contains("outcome")) return "killed " + sent + "\n";
  if (str(r, "outcome") == "exited")
    return "killed " + sent + ": it exited (" + str(r, "exit_reason") + ") after " +
           human_duration_ms(num(r, "waited_ms")) + "\n";
  return "sent the exit to " + sent + "; it had not exited after " + human_duration_ms(num(r, "waited_ms")) + "\n";
}

std::string render_result(const std::string& command, const json& r) {
  if (command == "overview") return render_overview(r);
  if (command == "processes") return render_processes(r);
  if (command == "process") return render_process(r);
  if (command == "tree") return render_tree(r);
  if (command == "listeners") return render_listeners(r);
  if (command == "modules") return render_modules(r);
  if (command == "tables") return render_tables(r);
  if (command == "nodes") return render_nodes(r);
  if (command == "kill") return render_kill(r);
  if (command == "load") return "loaded " + str(r, "name") + " " + str(r, "version") + "\n";
  if (command == "set_max_connections") {
    const json& max = r.at("max_connections");
    return str(r, "listener") + ": max_connections " +
           (max.is_string() ? terminal_safe(max.get<std::string>()) : std::to_string(max.get<long long>())) + "\n";
  }
  return json_text(r) + "\n";  // unreachable: cli_args admits only the commands above
}

}  // namespace observer_cli
