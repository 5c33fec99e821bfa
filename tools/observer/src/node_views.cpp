// listeners, tables, set_max_connections, modules and load: the net layer's
// listener registry, the tables layer's registry and the module layer, from the observer's thread (both APIs may be
// called from any thread; load runs its file work inline here, so other
// clients wait for it — a load is an operator's rare action).
#include "views.hpp"

#include <herd/actors/module.hpp>
#include <herd/net/listener.hpp>
#include <herd/tables/detail/table_base.hpp>

#include <map>

namespace herd::observer {

json listeners_view() {
  json a = json::array();
  for (auto& l : net::listeners()) {
    a.push_back({{"name", l.name},
                 {"address", l.bind + ":" + std::to_string(l.port)},
                 {"connections", l.connections},
                 {"max_connections", l.max_connections == net::infinity_connections ? json("infinity")
                                                                                     : json(l.max_connections)},
                 {"acceptors", l.acceptors},
                 {"accepts", l.accepts},
                 {"refusals", l.refusals},
                 {"emfile_backoffs", l.emfile_backoffs},
                 {"listen_drops", l.listen_drops},
                 {"suspended", l.suspended},
                 {"draining", l.draining},
                 {"supervisor", pid_json(l.supervisor)}});
  }
  return {{"listeners", std::move(a)}};
}

json tables_view() {
  using herd::tables::detail::table_kind;
  static const char* const kinds[] = {"set", "ordered_set", "bag", "duplicate_bag"};
  static const char* const access[] = {"public", "protected", "private"};
  json a = json::array();
  for (auto& t : herd::tables::detail::list()) {
    a.push_back({{"id", t.id},
                 {"name", t.name.empty() ? json(nullptr) : json(t.name)},
                 {"type", kinds[static_cast<int>(t.kind)]},
                 {"protection", access[static_cast<int>(t.access)]},
                 {"owner", pid_json(t.owner)},
                 {"heir", t.heir ? pid_json(t.heir) : json(nullptr)},
                 {"size", t.size},
                 {"memory", t.memory},
                 {"key_type", t.key_type},
                 {"value_type", t.value_type}});
  }
  return {{"tables", std::move(a)}};
}

json set_max_connections_view(const json& f) {
  std::string name = required_string(f, "listener");
  auto it = f.find("max");
  std::size_t n = 0;
  if (it != f.end() && it->is_string() && *it == "infinity") n = net::infinity_connections;
  else if (it != f.end() && it->is_number_unsigned()) n = it->get<std::size_t>();
  else throw request_failure{"bad_request", "max must be a number >= 0 or \"infinity\""};
  if (n != net::infinity_connections && n >= net::infinity_connections)
    throw request_failure{"bad_request", "max is too large (use \"infinity\")"};
  auto r = net::set_max_connections(name, n);
  if (!r) {
    if (r.error().code == net::errc::not_found) throw request_failure{"not_found", "no listener \"" + name + "\""};
    throw request_failure{"failed", r.error().message()};
  }
  return {{"listener", name},
          {"max_connections", n == net::infinity_connections ? json("infinity") : json(n)}};
}

json modules_view() {
  struct pair_t {
    json current = nullptr, old = nullptr;
  };
  std::map<std::string, pair_t> by_name;
  for (auto& v : modules::list()) {
    json j = {{"version", v.version}, {"path", v.path}, {"actors", v.actors.size()}};
    if (v.switch_failures) j["switch_failures"] = {{"count", v.switch_failures}, {"last", v.last_switch_failure}};
    auto& p = by_name[v.name];
    if (v.state == "current") p.current = std::move(j);
    else if (v.state == "old") p.old = std::move(j);
  }
  json a = json::array();
  for (auto& [name, p] : by_name) a.push_back({{"name", name}, {"current", p.current}, {"old", p.old}});
  return {{"modules", std::move(a)}};
}

json load_view(const json& f) {
  std::string path = required_string(f, "path");
  modules::load_options o;
  if (auto p = string_field(f, "purge")) {
    if (*p != "soft" && *p != "kill") throw request_failure{"bad_request", "purge: '" + *p + "' is not soft or kill"};
    o.purge = *p == "kill" ? modules::purge_mode::kill : modules::purge_mode::soft;
  }
  o.purge_timeout = std::chrono::milliseconds(int_field(f, "purge_timeout_ms", 5000, 1, 3'600'000));
  modules::result<modules::loaded> r = modules::load(path, o);
  if (!r) throw request_failure{"failed", r.error().message()};
  return {{"name", r->module}, {"version", r->version}};
}

}  // namespace herd::observer
