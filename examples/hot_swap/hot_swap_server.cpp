// hot_swap_server: connections served by a handler module that can be
// replaced while they run. At start it loads the newest *.so in --module-dir
// (by modification time); on SIGHUP it loads the newest again unless it is
// the very file it loaded last: same name, inode, size, modification and
// status-change times (a file overwritten in place keeps its name and inode
// but not its ctime, so it is loaded again). New connections get the new version at once;
// running ones switch at their next line when it lists theirs in
// upgrade_from; the old version is unloaded when the last one has left it.
//
//   hot_swap_server --port P --module-dir DIR [--module NAME]
//                   [--purge soft|kill] [--purge-timeout-ms MS]
//                   [--workers N] [other echo_server options]
//
// NAME is the module the connections run (default line_handler, whose
// versions answer "<version> <n> <line>"; echo_handler echoes, for
// swap_bench.py). The server refuses to start when the module it loads from
// DIR is not NAME. --purge: what a SIGHUP load does when the version before
// the running one is still in use — soft (default) refuses the load, kill
// kills the connections still on it (after --purge-timeout-ms, default 5000,
// the load fails if something still holds it). Idle connections do not hold
// it: they switch when a version that takes their state is loaded.
//
// Prints "listening on ADDR:PORT", and "loaded NAME VERSION from FILE in MS ms"
// (or "load failed: WHY" on stderr, keeping what runs) for each load.
// Deploy by copying the new file in under another name and renaming it: a
// file the node may be reading must never be overwritten.
#include "../server_main.hpp"

#include <herd/actors.hpp>
#include <herd/net/protocol.hpp>

#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace {

namespace fs = std::filesystem;

// Which file, as the file system sees it: an overwrite in place keeps the
// name and inode and may keep size and mtime (cp -p), never the ctime.
struct file_identity {
  std::string path;
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  timespec mtime{}, ctime{};
  bool operator==(const file_identity& o) const {
    return path == o.path && dev == o.dev && ino == o.ino && size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
           mtime.tv_nsec == o.mtime.tv_nsec && ctime.tv_sec == o.ctime.tv_sec && ctime.tv_nsec == o.ctime.tv_nsec;
  }
};

file_identity identity_of(const std::string& path) {
  file_identity id;
  id.path = path;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    id.dev = st.st_dev;
    id.ino = st.st_ino;
    id.size = st.st_size;
    id.mtime = st.st_mtim;
    id.ctime = st.st_ctim;
  }
  return id;
}

file_identity g_loaded;  // the file last loaded (root process only)
std::string g_module;  // --module
herd::modules::load_options g_load_options;  // --purge, --purge-timeout-ms

const char* const own_usage =
    "usage: hot_swap_server --module-dir DIR [--module NAME] [--purge soft|kill] [--purge-timeout-ms MS]\n"
    "                       --port P [server options, below]\n"
    "  --module-dir DIR       (required) loads the newest *.so in DIR at start and on SIGHUP\n"
    "  --module NAME          the module connections run (default line_handler); refused at start\n"
    "                         when the module loaded from DIR is another one\n"
    "  --purge soft|kill      when the version before the running one is still in use at a load:\n"
    "                         soft (default) refuses the load, kill kills the connections on it\n"
    "  --purge-timeout-ms MS  with --purge kill: how long to wait for them (default 5000)\n";

bool current_version_of(const std::string& name) {
  for (const auto& v : herd::modules::list())
    if (v.name == name && v.state == "current") return true;
  return false;
}

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
  // Taken before the load: a change while it reads is seen at the next SIGHUP.
  const file_identity id = identity_of(file);
  if (id == g_loaded) {
    std::fprintf(stderr, "hot_swap_server: nothing newer than %s\n", file.c_str());
    return true;
  }
  const auto t0 = std::chrono::steady_clock::now();
  herd::modules::result<herd::modules::loaded> r = herd::modules::load(file, g_load_options);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!r) {
    const bool hint = r.code() == herd::modules::errc::old_version_in_use;
    std::fprintf(stderr, "hot_swap_server: load failed: %s%s\n", r.error().message().c_str(),
                 hint ? " (hot_swap_server --purge kill does that)" : "");
    return !at_start;
  }
  g_loaded = id;
  std::printf("loaded %s %s from %s in %.1f ms\n", r->module.c_str(), r->version.c_str(), file.c_str(), ms);
  std::fflush(stdout);
  if (r->module != g_module) {
    // Connections would each fail with "no current version".
    std::fprintf(stderr, "hot_swap_server: %s holds module %s, not %s (the one connections run: --module NAME)\n",
                 file.c_str(), r->module.c_str(), g_module.c_str());
    return !at_start && current_version_of(g_module);
  }
  return true;
}

[[noreturn]] void own_usage_error(const std::string& why) {
  std::fprintf(stderr, "hot_swap_server: %s\n%s", why.c_str(), own_usage);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  // Its own options here; the rest are server_main's.
  std::vector<char*> rest{argv[0]};
  std::string dir;
  g_module = "line_handler";
  bool help = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      help = true;
      continue;
    }
    if (a != "--module-dir" && a != "--module" && a != "--purge" && a != "--purge-timeout-ms") {
      rest.push_back(argv[i]);
      continue;
    }
    if (i + 1 >= argc) own_usage_error(std::string(a) + " needs a value");
    const std::string v = argv[++i];
    if (a == "--module-dir") {
      dir = v;
    } else if (a == "--module") {
      if (v.empty()) own_usage_error("--module: the name is empty");
      g_module = v;
    } else if (a == "--purge") {
      if (v != "soft" && v != "kill") own_usage_error("--purge: '" + v + "' is not soft or kill");
      g_load_options.purge = v == "kill" ? herd::modules::purge_mode::kill : herd::modules::purge_mode::soft;
    } else {
      char* end = nullptr;
      const long ms = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || ms < 1 || ms > 3'600'000)
        own_usage_error("--purge-timeout-ms: '" + v + "' is not a number in [1, 3600000]");
      g_load_options.purge_timeout = std::chrono::milliseconds(ms);
    }
  }
  if (help) {
    // Ours on stdout, then server_main's usage of the shared options (which
    // ends the program as its --help does).
    std::fputs(own_usage, stdout);
    std::fflush(stdout);
    char* shared[] = {argv[0], const_cast<char*>("--help"), nullptr};
    (void)example::parse_server_options("hot_swap_server", 2, shared, {"--first-data-timeout-ms"});
    return 0;
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
  return example::server_main("hot_swap_server", o, herd::net::module_protocol(g_module, po),
                              {.before_listen = [] { return load_newest(true); },
                               .on_hangup = [] { load_newest(false); }});
}
