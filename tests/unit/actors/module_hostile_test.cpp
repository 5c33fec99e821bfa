// Hot code loading with hostile or careless input in the module directory:
// FIFOs, huge (sparse) files, relative paths. Each is refused with a clear
// error, promptly and without reading more than it must; the current version
// stays. Driven from the test thread (load runs inline), like module_test.cpp.
#include <herd/runtime/sanitizers.hpp>
#include <herd/actors/module.hpp>

#include <catch2/catch.hpp>

#include "greeter_api.hpp"
#include "module_sandbox.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <string>

using herd::modules::errc;
using module_fixture::greeter;
using module_fixture::info;
using module_fixture::sandbox;
namespace modules = herd::modules;

namespace {

// A /proc/self/status field in kB (VmHWM: peak resident set).
long status_kb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  return -1;
}

// The peak resident set grown by `fn`, in MiB: the peak is reset first
// (clear_refs 5, Linux >= 4.0).
template <class F>
long peak_growth_mib(F&& fn) {
  {
    std::ofstream c("/proc/self/clear_refs");
    c << "5";
  }
  long before = status_kb("VmRSS");
  fn();
  return (status_kb("VmHWM") - before) / 1024;
}

// A sparse file of `size` bytes starting with `head`, mode 0644.
std::string sparse_file(const std::string& path, const std::string& head, off_t size) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, head.data(), head.size()) == static_cast<ssize_t>(head.size()));
  REQUIRE(::ftruncate(fd, size) == 0);
  ::close(fd);
  return path;
}

std::string elf_header_of(const std::string& so) {
  std::ifstream in(so, std::ios::binary);
  std::string h(64, '\0');
  in.read(h.data(), 64);
  return h;
}

}  // namespace

// Before the fix the load opened the FIFO for reading and waited for a writer
// for ever (the observer hung with it).
TEST_CASE("loading refuses a FIFO in the module directory at once instead of waiting for a writer", "[modules]") {
  sandbox s;
  REQUIRE(modules::load(s.deploy("greeter_v1", "greeter.so")));
  std::string fifo = s.dir() + "/pipe.so";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  auto pending = std::async(std::launch::async, [] { return modules::load("pipe.so"); });
  // Not a speed bound: a hang detector. A load still waiting after a minute is
  // released (a writer opens the FIFO) so the test fails instead of hanging.
  if (pending.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    pending.wait();
    if (w >= 0) ::close(w);
    FAIL("load of a FIFO waited for a writer");
  }
  auto r = pending.get();
  INFO(module_fixture::why(r));
  CHECK(r.code() == errc::io_error);
  CHECK(r.error().message().find("is a FIFO, not a regular file") != std::string::npos);
  CHECK(info("greeter", "1").state == "current");
}

// Before the fix the whole file was read into memory before its first bytes
// were looked at: 1 GiB of zeros took 1 GiB, 64 GiB ended the node with bad_alloc.
TEST_CASE("a huge sparse file is refused by its size before it is read, and a big non-ELF file after its "
          "header - the peak resident set stays small",
          "[modules]") {
  sandbox s;
  REQUIRE(modules::load(s.deploy("greeter_v1", "greeter.so")));
  const std::string elf_head = elf_header_of(std::string(HERD_TEST_MODULES_DIR) + "/greeter_v1.so");
  modules::result<modules::loaded> huge = errc::no_such_module, huger = huge, junk = huge;  // until loaded
  long grown = peak_growth_mib([&] {
    huge = modules::load(sparse_file(s.dir() + "/huge.so", elf_head, off_t(1) << 30));
    huger = modules::load(sparse_file(s.dir() + "/huger.so", elf_head, off_t(64) << 30));
  });
  INFO(module_fixture::why(huge));
  INFO(module_fixture::why(huger));
  CHECK(huge.code() == errc::too_large);
  CHECK(huge.error().message().find("1073741824 bytes, more than the 268435456 a module may have") != std::string::npos);
  CHECK(huger.code() == errc::too_large);
  CHECK(grown < 64);
  // Under the cap but not ELF: refused from its first 64 bytes.
  grown = peak_growth_mib([&] { junk = modules::load(sparse_file(s.dir() + "/junk.so", "junk", off_t(200) << 20)); });
  INFO(module_fixture::why(junk));
  CHECK(junk.code() == errc::not_a_shared_object);
  CHECK(junk.error().message().find("not an ELF file") != std::string::npos);
  CHECK(grown < 64);
  // The cap is the caller's: a real module over it is refused too.
  modules::load_options tight;
  tight.max_file_size = 4096;
  auto r = modules::load(s.deploy("greeter_v2", "greeter2.so"), tight);
  CHECK(r.code() == errc::too_large);
  CHECK(info("greeter", "1").state == "current");
}

// Before the fix a relative path with a '/' was resolved against the working
// directory.
TEST_CASE("a relative load path is resolved against the module directory, and must stay directly in it",
          "[modules]") {
  sandbox s;
  s.deploy("greeter_v1", "greeter.so");
  auto r = modules::load("./greeter.so");
  INFO(module_fixture::why(r));
  REQUIRE(r);
  CHECK(info("greeter", "1").path == s.dir() + "/greeter.so");
  REQUIRE(::mkdir((s.dir() + "/sub").c_str(), 0755) == 0);
  sandbox::copy_file(std::string(HERD_TEST_MODULES_DIR) + "/greeter_v2.so", s.dir() + "/sub/greeter.so", 0644);
  auto sub = modules::load("sub/greeter.so");
  INFO(module_fixture::why(sub));
  CHECK(sub.code() == errc::outside_module_dir);
  sandbox other;
  other.deploy("greeter_v2", "greeter.so");
  herd::modules::set_module_dir(s.dir());
  std::string escape = "../" + other.dir().substr(other.dir().rfind('/') + 1) + "/greeter.so";
  auto up = modules::load(escape);
  INFO(module_fixture::why(up));
  CHECK(up.code() == errc::outside_module_dir);
  CHECK(info("greeter", "1").state == "current");
  // A path that names a file of the module directory through a subdirectory is fine.
  auto again = modules::load("sub/../greeter.so");
  INFO(module_fixture::why(again));
  CHECK(again);
}

// A relative module directory is made absolute when it is set, so a later
// change of working directory does not move it.
TEST_CASE("a relative module directory is made absolute when it is set", "[modules]") {
  sandbox s;
  s.deploy("greeter_v1", "greeter.so");
  char was[4096];
  REQUIRE(::getcwd(was, sizeof was));
  REQUIRE(::chdir("/tmp") == 0);
  modules::set_module_dir(s.dir().substr(std::string("/tmp/").size()) + "/");
  REQUIRE(::chdir(was) == 0);
  CHECK(modules::module_dir() == s.dir());
  auto r = modules::load("greeter.so");
  INFO(module_fixture::why(r));
  CHECK(r);
}

namespace {

// Sets $HERD_TEST_CONSTRUCTOR_MARKER to a path in the sandbox for the
// fixtures' static constructors; true if one ran.
struct constructor_marker {
  std::string path;
  explicit constructor_marker(const sandbox& s) : path(s.dir() + "-constructor-ran") {
    ::unlink(path.c_str());
    ::setenv("HERD_TEST_CONSTRUCTOR_MARKER", path.c_str(), 1);
  }
  ~constructor_marker() {
    ::unsetenv("HERD_TEST_CONSTRUCTOR_MARKER");
    ::unlink(path.c_str());
  }
  bool ran() const { return ::access(path.c_str(), F_OK) == 0; }
};

}  // namespace

// Before the fix the ABI was checked after dlopen, which had run the module's
// static constructors (the marker appeared).
TEST_CASE("a module refused for its ABI is refused before dlopen - its static constructor never runs", "[modules]") {
  sandbox s;
  constructor_marker marker(s);
  REQUIRE(modules::load(s.deploy("greeter_v1", "greeter.so")));
  auto r = modules::load(s.deploy("bad_abi", "bad_abi.so"));
  INFO(module_fixture::why(r));
  CHECK(r.code() == errc::abi_mismatch);
  // The text comes from the file (found through the descriptor's relocation).
  CHECK(r.error().message().find("module built with \"herd ") != std::string::npos);
  CHECK(r.error().message().find("(hash 4660)") != std::string::npos);  // HERD_MODULE_ABI_OVERRIDE=0x1234
  CHECK_FALSE(marker.ran());
  CHECK_FALSE(module_fixture::mapped(s.dir() + "/bad_abi"));
  CHECK(info("greeter", "1").state == "current");
}

// Before the fix dlopen loaded libasan into a node built without ASan, whose
// constructor ended the process ("ASan runtime does not come first").
TEST_CASE("a module linked with a sanitizer runtime the node was not started with is refused before dlopen",
          "[modules]") {
  sandbox s;
  constructor_marker marker(s);
  REQUIRE(modules::load(s.deploy("greeter_v1", "greeter.so")));
  auto r = modules::load(s.deploy("asan_linked", "asan_linked.so"));
  INFO(module_fixture::why(r));
#if HERD_ASAN || HERD_TSAN
  // An ASan node has the runtime first: such a module loads. (The TSan build
  // links the fixture without ASan, which g++ cannot combine with TSan.)
  CHECK(r);
  CHECK(marker.ran());
#else
  CHECK(r.code() == errc::abi_mismatch);
  CHECK(r.error().message().find("built with AddressSanitizer (it needs libasan.so") != std::string::npos);
  CHECK(r.error().message().find("this node was not started with") != std::string::npos);
  CHECK_FALSE(marker.ran());
  CHECK(info("greeter", "1").state == "current");
#endif
}
