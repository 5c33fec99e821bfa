// See dispatch.hpp. The request names are the protocol's; anything a view
// throws becomes an error reply (request_failure: its code; anything else:
// `failed`), so a bad request never ends the connection.
#include "dispatch.hpp"

#include "views.hpp"

#include <exception>
#include <new>

namespace herd::observer {
namespace {

json trace_view(const request& r, dispatch_env& env) {
  trace_request t;
  t.id = r.id;
  t.target = required_pid(r.fields, "pid");
  t.limit = uint32_t(int_field(r.fields, "limit", 100, 1, 10000));
  t.timeout_ms = uint64_t(int_field(r.fields, "timeout_ms", 60000, 1, 86'400'000));
  if (!env.start_trace) throw request_failure{"failed", "tracing is not available here"};
  if (auto err = env.start_trace(t)) throw *err;
  return {{"tracing", t.target.to_string()}, {"limit", t.limit}};
}

json answer(const request& r, dispatch_env& env) {
  const std::string& n = r.name;
  const json& f = r.fields;
  if (n == "overview") {
    static const sampler none;
    return overview_view(env.samples ? *env.samples : none);
  }
  if (n == "processes") return processes_view(f, env.rate_baseline);
  if (n == "process") return process_view(f);
  if (n == "tree") return tree_view();
  if (n == "listeners") return listeners_view();
  if (n == "tables") return tables_view();
  if (n == "nodes") return nodes_view(f);
  if (n == "modules") return modules_view();
  if (n == "kill") return kill_view(f);
  if (n == "load") return load_view(f);
  if (n == "set_max_connections") return set_max_connections_view(f);
  if (n == "trace") return trace_view(r, env);
  throw request_failure{"unknown_request", "unknown request \"" + n + "\""};
}

}  // namespace

std::string dispatch(std::string_view line, dispatch_env& env) {
  json id;
  try {
    parsed p = parse_request(line);
    id = p.id;
    if (!p.req) return error_line(p.id, p.err.code, p.err.message);
    if (p.req->name == "load" && env.defer_load) {
      env.defer_load(line);
      return {};
    }
    return ok_line(id, answer(*p.req, env));
  } catch (const request_failure& e) {
    return error_line(id, e.code, e.message);
  } catch (const std::bad_alloc&) {
    return error_line(id, "failed", "out of memory");
  } catch (const std::exception& e) {
    return error_line(id, "failed", e.what());
  }
}

}  // namespace herd::observer
