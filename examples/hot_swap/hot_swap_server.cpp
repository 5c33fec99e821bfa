// hot_swap_server: connections served by a handler module that can be
// replaced while they run. At start it loads the newest *.so in --module-dir
// (by modification time); on SIGHUP it loads the newest again if that is a
// file it has not loaded yet. New connections get the new version at once;
// running ones switch at their next line when it lists theirs in
// upgrade_from; the old version is unloaded when the last one has left it.
//
//   hot_swap_server --port P --module-dir DIR [--module NAME] [--workers N]
//                   [other echo_server options]
//
// NAME is the module the connections run (default line_handler, whose
// versions answer "<version> <n> <line>"; echo_handler echoes, for
// swap_bench.py).
//
// Prints "listening on ADDR:PORT", and "loaded NAME VERSION from FILE in MS ms"
// (or "load failed: WHY" on stderr, keeping what runs) for each load.
// Deploy by copying the new file in under another name and renaming it: a
// file the node may be reading must never be overwritten.
#include "../server_main.hpp"

#include <herd/actors.hpp>
#include <herd/net/protocol.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::string g_loaded;  // the file last loaded (root process only)

// The newest *.so in the module directory, or empty.
std::string newest_module(const std::string& dir) {
  std::error_code ec;
  fs::path best;
  fs::file_time_type best_time{};
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".so" || !e.is_regular_file(ec)) continue;
    const fs::file_time_type t = e.last_write_time(ec);
    if (ec) continue;
    if (best.empty() || t > best_time || (t == best_time && e.path() > best)) {
      best = e.path();
      best_time = t;
    }
  }
  return best.string();
}

// From the root process. false when nothing could be loaded at all.
bool load_newest(bool at_start) {
  const std::string file = newest_module(herd::modules::module_dir());
  if (file.empty()) {
    std::fprintf(stderr, "hot_swap_server: no *.so in %s\n", herd::modules::module_dir().c_str());
    return false;
  }
  if (file == g_loaded) {
    std::fprintf(stderr, "hot_swap_server: nothing newer than %s\n", file.c_str());
    return true;
  }
  const auto t0 = std::chrono::steady_clock::now();
  herd::modules::load_result r = herd::modules::load(file);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!r) {
    std::fprintf(stderr, "hot_swap_server: load failed: %s\n", r.message.c_str());
    return !at_start;
  }
  g_loaded = file;
  std::printf("loaded %s %s from %s in %.1f ms\n", r.module.c_str(), r.version.c_str(), file.c_str(), ms);
  std::fflush(stdout);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // --module-dir is this program's own; the rest are server_main's.
  std::vector<char*> rest{argv[0]};
  std::string dir, module = "line_handler";
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--module-dir" || a == "--module") {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "hot_swap_server: %s needs a value\n", argv[i]);
        return 2;
      }
      (a == "--module" ? module : dir) = argv[++i];
    } else {
      rest.push_back(argv[i]);
    }
  }
  // The module's handler owns the connection from its first byte on.
  example::server_options o =
      example::parse_server_options("hot_swap_server", int(rest.size()), rest.data(), {"--first-data-timeout-ms"});
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec)) {
    std::fprintf(stderr, "hot_swap_server: --module-dir DIR is required and must be a directory%s%s\n",
                 dir.empty() ? "" : ": ", dir.c_str());
    return 2;
  }
  herd::modules::set_module_dir(dir);
  herd::net::protocol_options po{.idle_hibernate = o.idle_hibernate};
  return example::server_main("hot_swap_server", o, herd::net::module_protocol(module, po),
                              {.before_listen = [] { return load_newest(true); },
                               .on_hangup = [] { load_newest(false); }});
}
