// The optional Prometheus endpoint: a loopback-only TCP listener serving
// GET /metrics (text format 0.0.4) from the observer's poll loop.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace herd::observer {

// Parses "127.0.0.1:PORT" / "[::1]:PORT" / "localhost:PORT", binds and
// listens (non-blocking). -1 with *error set for anything else — a
// non-loopback address is refused, never bound.
int open_metrics_listener(std::string_view addr, uint16_t* port, std::string* error);

// The whole HTTP response for a request head (`head` up to its blank line).
std::string http_response(std::string_view head, const std::string& metrics_body);

}  // namespace herd::observer
