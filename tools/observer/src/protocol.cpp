// See protocol.hpp.
#include "protocol.hpp"

#include <charconv>

namespace herd::observer {
namespace {

std::string line_of(const json& j) {
  // replace: a name or an exit reason may hold bytes that are not UTF-8.
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  s.push_back('\n');
  return s;
}

json envelope(const json& id) {
  json j;
  j["v"] = protocol_version;
  if (!id.is_null()) j["id"] = id;
  return j;
}

}  // namespace

parsed parse_request(std::string_view line) {
  parsed out;
  json j = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    out.err = {"parse_error", j.is_discarded() ? "the line is not JSON" : "the request must be a JSON object"};
    return out;
  }
  if (auto it = j.find("id"); it != j.end()) {
    if (it->is_number() || it->is_string()) out.id = *it;
    else {
      out.err = {"bad_request", "id must be a number or a string"};
      return out;
    }
  }
  auto v = j.find("v");
  if (v == j.end() || !v->is_number_integer() || v->get<int64_t>() != protocol_version) {
    out.err = {"bad_version", "this node speaks protocol version 1 (\"v\":1)"};
    return out;
  }
  auto r = j.find("req");
  if (r == j.end() || !r->is_string()) {
    out.err = {"bad_request", "req must be a string (the request's name)"};
    return out;
  }
  out.req = request{out.id, r->get<std::string>(), std::move(j)};
  return out;
}

std::string ok_line(const json& id, json result) {
  json j = envelope(id);
  j["ok"] = true;
  j["result"] = std::move(result);
  return line_of(j);
}

std::string error_line(const json& id, std::string_view code, std::string_view message) {
  json j = envelope(id);
  j["ok"] = false;
  j["error"] = {{"code", code}, {"message", message}};
  return line_of(j);
}

std::string event_line(const json& id, json event) {
  json j = envelope(id);
  j["ok"] = true;
  j["event"] = std::move(event);
  return line_of(j);
}

std::string done_line(const json& id, json done) {
  json j = envelope(id);
  j["ok"] = true;
  j["done"] = std::move(done);
  return line_of(j);
}

std::optional<pid> parse_pid(std::string_view s) {
  if (s.size() < 5 || s.front() != '<' || s.back() != '>') return std::nullopt;
  s = s.substr(1, s.size() - 2);
  auto dot = s.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  uint32_t idx = 0, gen = 0;
  auto a = std::from_chars(s.data(), s.data() + dot, idx);
  auto b = std::from_chars(s.data() + dot + 1, s.data() + s.size(), gen);
  if (a.ec != std::errc{} || a.ptr != s.data() + dot || dot == 0) return std::nullopt;
  if (b.ec != std::errc{} || b.ptr != s.data() + s.size() || dot + 1 == s.size()) return std::nullopt;
  pid p{idx, gen};
  if (!p.valid()) return std::nullopt;
  return p;
}

json pid_json(pid p) { return p.valid() ? json(p.to_string()) : json(nullptr); }

int64_t int_field(const json& f, const char* name, int64_t fallback, int64_t lo, int64_t hi) {
  auto it = f.find(name);
  if (it == f.end() || it->is_null()) return fallback;
  auto range = std::string(name) + " must be " + std::to_string(lo) + ".." + std::to_string(hi);
  if (!it->is_number_integer()) throw request_failure{"bad_request", range};
  // Unsigned values above INT64_MAX read as negative: out of range either way.
  int64_t v = it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(INT64_MAX) ? -1 : it->get<int64_t>();
  if (v < lo || v > hi) throw request_failure{"bad_request", range};
  return v;
}

std::optional<std::string> string_field(const json& f, const char* name) {
  auto it = f.find(name);
  if (it == f.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) throw request_failure{"bad_request", std::string(name) + " must be a string"};
  return it->get<std::string>();
}

std::string required_string(const json& f, const char* name) {
  auto s = string_field(f, name);
  if (!s) throw request_failure{"bad_request", std::string(name) + " is required (a string)"};
  return *s;
}

pid required_pid(const json& f, const char* name) {
  auto s = string_field(f, name);
  if (!s) throw request_failure{"bad_request", std::string(name) + " is required (a pid string \"<index.generation>\")"};
  auto p = parse_pid(*s);
  if (!p) throw request_failure{"bad_request", std::string(name) + ": '" + *s + "' is not a pid \"<index.generation>\""};
  return *p;
}

}  // namespace herd::observer
