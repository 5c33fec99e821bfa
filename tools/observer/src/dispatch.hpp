// One request line in, one reply line out: parsing (protocol.hpp), then the
// request's view (views.hpp). `trace` is the one request that outlives its
// line: the server starts it through `start_trace` and streams its events.
#pragma once
#include "protocol.hpp"
#include "sampler.hpp"

#include <herd/actors/introspect.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace herd::observer {

struct trace_request {
  json id;
  pid target;
  uint32_t limit = 100;
  uint64_t timeout_ms = 60000;
};

struct dispatch_env {
  const sampler* samples = nullptr;
  // The baseline of `processes --sort reductions_rate` (the server's; nullptr: no rates).
  introspect::reductions_sample* rate_baseline = nullptr;
  // Starts a trace; an error fails the request. On success the reply
  // (tracing, limit) is what dispatch returns; events follow it.
  std::function<std::optional<request_failure>(const trace_request&)> start_trace;
  // Set: a `load` line is handed to it (the server answers it from a helper
  // process later) and dispatch returns "". Unset: load runs here.
  std::function<void(std::string_view line)> defer_load;
};

// The reply line(s) for `line` (without its '\n'), or "" for a deferred
// load. Never throws.
std::string dispatch(std::string_view line, dispatch_env& env);

}  // namespace herd::observer
