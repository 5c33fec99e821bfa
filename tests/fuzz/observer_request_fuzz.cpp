// libFuzzer target: the observer's request path without a socket — line
// framing (client::feed, the 64 KiB cut), parsing and dispatch — with no node
// running, so every request takes its "nothing there" branch (no process,
// listener or module; load without a module directory) and nothing touches
// the file system or the network. Each reply must be one line of JSON with
// "v":1 and a boolean "ok"; anything else (or a crash, a sanitizer report)
// is a finding.
//
// Build: tools/fuzz.sh (clang++ -fsanitize=fuzzer,address,undefined).
#include "client.hpp"
#include "dispatch.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

void check_reply(const std::string& line) {
  if (line.empty() || line.back() != '\n') std::abort();
  if (line.find('\n') != line.size() - 1) std::abort();  // exactly one line
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) std::abort();
  if (j.value("v", 0) != 1 || !j.contains("ok") || !j["ok"].is_boolean()) std::abort();
  if (!j["ok"].get<bool>() && !j["error"]["code"].is_string()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace herd::observer;
  dispatch_env env;
  // A trace cannot start without a node; say so as the server would.
  env.start_trace = [](const trace_request&) -> std::optional<request_failure> {
    return request_failure{"noproc", "no such live process"};
  };
  client c;  // fd -1: replies are only queued, never written
  std::string_view in(reinterpret_cast<const char*>(data), size);
  // The first byte picks where the input is split in two reads, so framing
  // across reads is exercised too.
  std::size_t cut = size ? data[0] * size / 256 : 0;
  for (std::string_view part : {in.substr(0, cut), in.substr(cut)}) {
    c.feed(
        part,
        [&](std::string_view line) {
          std::string r = dispatch(line, env);
          check_reply(r);
          c.queue(r);
        },
        [&] { c.queue(error_line(nullptr, "too_long", "cut")); });
  }
  if (c.in.size() > max_line) std::abort();  // the framing never holds more than a line
  return 0;
}
