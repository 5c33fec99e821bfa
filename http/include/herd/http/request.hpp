// herd::http::request — one parsed HTTP/1.1 request, the seam between the
// HTTP server (http/) and what runs on top of it: routes, and the WebSocket
// upgrade (websocket/), which takes the connection over from the request
// that asked for it.
//
// Owned strings, not views into the read buffer: a request outlives the
// bytes it was parsed from (the buffer is reused for the next pipelined
// request, and an upgrade keeps its request for the handler's lifetime).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace herd::http {

struct header {
  std::string name;   // as sent; compare with iequals
  std::string value;  // leading and trailing whitespace removed
};

struct request {
  std::string method;  // "GET", "POST", ... as sent (methods are case-sensitive)
  std::string target;  // the request-target as sent: "/push/user/7?x=1"
  std::string path;    // target up to '?', not percent-decoded
  std::string query;   // after '?', without it; empty when none
  int version_minor = 1;  // HTTP/1.<minor>
  std::vector<header> headers;  // in order; repeated names kept
  std::string body;    // decoded (chunked framing removed)

  // The first header called `name` (ASCII case-insensitive), if any.
  std::optional<std::string_view> find(std::string_view name) const;
  // Every value of `name` joined as a list would be ("a, b"), per RFC 9110
  // 5.3; empty when absent.
  std::string joined(std::string_view name) const;
  // The value of query parameter `key` (no decoding), if present.
  std::optional<std::string_view> query_param(std::string_view key) const;
};

bool iequals(std::string_view a, std::string_view b) noexcept;

}  // namespace herd::http
