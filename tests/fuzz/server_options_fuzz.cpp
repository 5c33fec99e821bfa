// libFuzzer target: the example servers' command line
// (example::try_parse_server_options) on arbitrary argument vectors — the
// input split at NUL bytes. A bad command line must come back as a reason,
// never a crash; a good one must have a port and an address to bind, and
// --metrics only with --observer.
#include "server_main.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args{"fuzz"};
  std::string cur;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(static_cast<char>(data[i]));
    }
  }
  args.push_back(cur);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  example::server_options o;
  auto why = example::try_parse_server_options(static_cast<int>(args.size()), argv.data(), o);
  if (why) {
    if (why->empty()) std::abort();
  } else {
    if (!o.port || o.bind.empty()) std::abort();
    if (!o.metrics.empty() && o.observer.empty()) std::abort();
    if (o.workers > 1024 || o.acceptors < 1 || o.acceptors > 1024) std::abort();
  }
  return 0;
}
