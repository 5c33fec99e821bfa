// The observer protocol's envelope (docs/observer-protocol.md): parsing one
// request line into (id, name, fields) or an error, and formatting replies.
// Pure functions: no node needed (the fuzz target drives them directly).
#pragma once
#include <nlohmann/json.hpp>

#include <herd/actors/pid.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace herd::observer {

using json = nlohmann::ordered_json;

inline constexpr int protocol_version = 1;
inline constexpr std::size_t max_line = 65536;

// An error reply waiting to be sent: `code` is one of the protocol's codes.
struct request_error {
  std::string code;
  std::string message;
};

struct request {
  json id;  // null when absent
  std::string name;
  json fields;  // the whole object (unknown fields ignored)
};

// Parses one line (without its '\n'). On failure `err` is set and, when the
// line was an object with a usable id, `id` holds it for the reply.
struct parsed {
  std::optional<request> req;
  request_error err;
  json id;
};
parsed parse_request(std::string_view line);

// One reply line, '\n' included. Never throws on odd bytes (invalid UTF-8 in
// strings is replaced).
std::string ok_line(const json& id, json result);
std::string error_line(const json& id, std::string_view code, std::string_view message);
std::string event_line(const json& id, json event);
std::string done_line(const json& id, json done);

// "<index.generation>" -> pid; nullopt if malformed.
std::optional<pid> parse_pid(std::string_view s);
json pid_json(pid p);  // the string, or null for no_pid

// Thrown by field readers while handling a request; becomes an error reply.
struct request_failure {
  std::string code;
  std::string message;
};

// Field readers: absent -> fallback; present with the wrong type or out of
// range -> request_failure{"bad_request", ...}.
int64_t int_field(const json& f, const char* name, int64_t fallback, int64_t lo, int64_t hi);
std::optional<std::string> string_field(const json& f, const char* name);
std::string required_string(const json& f, const char* name);
pid required_pid(const json& f, const char* name);

}  // namespace herd::observer
