// Hot code loading, the module layer: loading, refusing, switching versions,
// carrying state, unloading. These tests drive herd::modules from the test
// thread (load and unload then run inline); module_test_refs.cpp covers what
// needs a node (messages, timers, continuations, purge).
#include <herd/actors/module.hpp>

#include <catch2/catch.hpp>

#include "greeter_api.hpp"
#include "module_sandbox.hpp"

#include <sys/stat.h>

#include <stdexcept>
#include <string>

using herd::modules::errc;
using module_fixture::greeter;
using module_fixture::info;
using module_fixture::mapped;
using module_fixture::sandbox;
using module_fixture::wait_for;
namespace modules = herd::modules;

namespace {

// Loads `file`, expects refusal with `code` and a message containing `why`,
// and checks that v1 (loaded first) is still current and working, and that
// nothing of the refused file stays loaded.
void expect_refused(sandbox& s, const std::string& file, errc code, const std::string& why) {
  REQUIRE(modules::load(s.deploy("greeter_v1", "greeter.so")));
  auto r = modules::load(file);
  INFO(module_fixture::why(r));
  CHECK(r.code() == code);
  CHECK_FALSE(static_cast<bool>(r));
  CHECK(r.error().message().find(why) != std::string::npos);
  CHECK(r.error().message().rfind(std::string(modules::to_string(code)) + ": ", 0) == 0);  // the code first
  CHECK_THROWS_AS(r.value(), std::logic_error);  // a refusal is a value; reading it as a success is a bug
  CHECK(info("greeter", "1").state == "current");
  auto h = modules::create<greeter>("greeter");
  CHECK(h->greet("joe") == "v1 hello joe #1");
  h.reset();
  CHECK(wait_for([] { return module_fixture::loaded_versions() == 1; }));
}

}  // namespace

TEST_CASE("a loaded module makes handlers of its current version and counts one reference per handler", "[modules]") {
  sandbox s;
  auto r = modules::load(s.deploy("greeter_v1", "greeter.so"));
  INFO(module_fixture::why(r));
  REQUIRE(r);
  CHECK(r->module == "greeter");
  CHECK(r->version == "1");
  auto a = modules::create<greeter>("greeter");
  auto b = modules::create<greeter>("greeter");
  CHECK(a->greet("joe") == "v1 hello joe #1");
  CHECK(a->greet("ann") == "v1 hello ann #2");
  CHECK(b->greet("bob") == "v1 hello bob #1");
  CHECK(a.version() == "1");
  CHECK_FALSE(a.outdated());
  auto i = info("greeter", "1");
  CHECK(i.state == "current");
  CHECK(i.refs == 3);  // being current, and two handlers
  CHECK(i.path == s.dir() + "/greeter.so");
  CHECK(i.staged_path.find("/greeter.") != std::string::npos);
  CHECK(i.staged_path.find(s.dir()) == std::string::npos);
  CHECK(mapped(i.staged_path));
  a.reset();
  b.reset();
  CHECK(info("greeter", "1").refs == 1);
  // Unloaded when no longer current and unreferenced.
  CHECK(modules::unload("greeter"));
  CHECK(wait_for([&] { return !mapped(i.staged_path); }));
  CHECK(wait_for([] { return module_fixture::loaded_versions() == 0; }));
}

TEST_CASE("loading v2 makes v1 old and v1 is unmapped when its last handler goes, though it uses make_shared", "[modules]") {
  sandbox s;
  REQUIRE(modules::load(s.deploy("greeter_v1", "greeter_v1.so")));
  auto h1 = modules::create<greeter>("greeter");
  std::string v1_path = info("greeter", "1").staged_path;
  auto r = modules::load(s.deploy("greeter_v2", "greeter_v2.so"));
  INFO(module_fixture::why(r));
  REQUIRE(r);
  CHECK(r->version == "2");
  CHECK(h1.outdated());
  CHECK(info("greeter", "1").state == "old");
  CHECK(info("greeter", "2").state == "current");
  auto h2 = modules::create<greeter>("greeter");
  CHECK(h2->greet("joe") == "v2 hello joe #1");
  CHECK(h1->greet("joe") == "v1 hello joe #1");  // the old code still runs
  CHECK(mapped(v1_path));
  h1.reset();
  CHECK(wait_for([&] { return !mapped(v1_path); }));
  CHECK(wait_for([] { return info("greeter", "1").state.empty(); }));  // forgotten after the dlclose
  CHECK(h2->greet("joe") == "v2 hello joe #2");
}

TEST_CASE("upgrade carries a handler's state from v1 to v2 through export_state and code_change", "[modules]") {
  sandbox s;
  REQUIRE(modules::load(s.deploy("greeter_v1", "greeter.so")));
  auto h = modules::create<greeter>("greeter");
  h->greet("a");
  h->greet("b");
  h->greet("c");
  CHECK_FALSE(modules::upgrade(h));  // nothing newer yet
  std::string v1_path = info("greeter", "1").staged_path;
  REQUIRE(modules::load(s.deploy("greeter_v2", "greeter.so")));
  REQUIRE(h.outdated());
  CHECK(modules::upgrade(h));
  CHECK(h.version() == "2");
  CHECK_FALSE(h.outdated());
  CHECK(h->count() == 3);
  CHECK(h->upgraded_from() == "1");
  CHECK(h->greet("d") == "v2 hello d #4");
  // The switch destroyed the only v1 handler.
  CHECK(wait_for([&] { return !mapped(v1_path); }));
}

TEST_CASE("upgrade leaves a handler on its version when the current one does not list it or it is never_switch", "[modules]") {
  sandbox s;
  SECTION("v3 takes state only from v2") {
    REQUIRE(modules::load(s.deploy("greeter_v1", "greeter.so")));
    auto h = modules::create<greeter>("greeter");
    h->greet("a");
    REQUIRE(modules::load(s.deploy("greeter_v3", "greeter.so")));
    CHECK(h.outdated());
    CHECK_FALSE(modules::upgrade(h));
    CHECK(h.version() == "1");
    CHECK(h->greet("b") == "v1 hello b #2");
  }
  SECTION("a never_switch handler keeps its version") {
    REQUIRE(modules::load(s.deploy("greeter_never", "greeter.so")));
    auto h = modules::create<greeter>("greeter");
    REQUIRE(modules::load(s.deploy("greeter_v2", "greeter.so")));  // lists "1n"
    CHECK(info("greeter", "1n").never_switch);
    CHECK_FALSE(modules::upgrade(h));
    CHECK(h.version() == "1n");
  }
}

TEST_CASE("a code_change that throws leaves the old handler in place and reports the module's error", "[modules]") {
  sandbox s;
  REQUIRE(modules::load(s.deploy("greeter_v1", "greeter.so")));
  auto h = modules::create<greeter>("greeter");
  h->greet("a");
  REQUIRE(modules::load(s.deploy("greeter_v2_throws", "greeter.so")));
  std::string what;
  try {
    modules::upgrade(h);
  } catch (const herd::module_error& e) {
    what = e.what();
  }
  INFO(what);
  CHECK(what.find("code_change from 1 threw std::runtime_error: cannot read state n=1") != std::string::npos);
  CHECK(h.version() == "1");
  CHECK(h->greet("b") == "v1 hello b #2");
  CHECK(info("greeter", "2t").refs == 1);  // the failed handler's reference was dropped
}

TEST_CASE("a third load while the old version is referenced is refused by default and the current version stays", "[modules]") {
  sandbox s;
  REQUIRE(modules::load(s.deploy("greeter_v1", "greeter.so")));
  auto h1 = modules::create<greeter>("greeter");
  REQUIRE(modules::load(s.deploy("greeter_v2", "greeter.so")));
  auto r = modules::load(s.deploy("greeter_v3", "greeter.so"));
  INFO(module_fixture::why(r));
  CHECK(r.code() == errc::old_version_in_use);
  CHECK(r.error().message().find("old version 1 is still in use") != std::string::npos);
  CHECK(info("greeter", "2").state == "current");
  CHECK(modules::create<greeter>("greeter")->greet("x") == "v2 hello x #1");
  CHECK(wait_for([] { return info("greeter", "3").state.empty(); }));  // the refused copy is unloaded
  h1.reset();
  auto r2 = modules::load(s.deploy("greeter_v3", "greeter.so"));
  INFO(module_fixture::why(r2));
  CHECK(r2);
  CHECK(info("greeter", "3").state == "current");
}

TEST_CASE("loading fails with a clear error for a missing file", "[modules]") {
  sandbox s;
  expect_refused(s, "nothing_here.so", errc::file_missing, "no such file");
}

TEST_CASE("loading refuses a file outside the module directory", "[modules]") {
  sandbox s;
  sandbox other;  // another directory; the module directory is reset below
  std::string outside = other.deploy("greeter_v2", "greeter.so");
  herd::modules::set_module_dir(s.dir());
  expect_refused(s, outside, errc::outside_module_dir, "is not in the module directory");
  // A symlink in the module directory that points outside is refused too.
  REQUIRE(::symlink(outside.c_str(), (s.dir() + "/link.so").c_str()) == 0);
  auto r = modules::load("link.so");
  CHECK(r.code() == errc::outside_module_dir);
}

TEST_CASE("loading refuses a group- or world-writable file or directory", "[modules]") {
  sandbox s;
  std::string f = s.deploy("greeter_v2", "writable.so", 0664);
  expect_refused(s, f, errc::unsafe_permissions, "writable by its group");
  ::chmod(f.c_str(), 0644);
  ::chmod(s.dir().c_str(), 0777);
  auto r = modules::load(f);
  INFO(module_fixture::why(r));
  CHECK(r.code() == errc::unsafe_permissions);
  CHECK(r.error().message().find("module directory") != std::string::npos);
  CHECK(r.error().message().find("writable by others") != std::string::npos);
  ::chmod(s.dir().c_str(), 0700);
  CHECK(modules::load(f));
}

TEST_CASE("loading refuses a file that is not a shared object", "[modules]") {
  sandbox s;
  std::string f = sandbox::copy_file(std::string(HERD_TEST_MODULES_DIR) + "/not_elf.so", s.dir() + "/junk.so", 0644);
  expect_refused(s, f, errc::not_a_shared_object, "not an ELF file");
}

TEST_CASE("loading refuses a shared object without a herd descriptor", "[modules]") {
  sandbox s;
  expect_refused(s, s.deploy("no_descriptor", "plain.so"), errc::missing_descriptor, "herd_module_descriptor_v1");
}

TEST_CASE("loading refuses a module built against another herd ABI and says what it was built with", "[modules]") {
  sandbox s;
  expect_refused(s, s.deploy("bad_abi", "bad_abi.so"), errc::abi_mismatch, "herd ABI mismatch: module built with \"herd ");
}

TEST_CASE("loading refuses a module with a thread_local destructor since it could never be unloaded", "[modules]") {
  sandbox s;
  expect_refused(s, s.deploy("bad_thread_local", "tls.so"), errc::unloadable, "__cxa_thread_atexit");
}

TEST_CASE("loading refuses a module with a GNU unique symbol since it could never be unloaded", "[modules]") {
  sandbox s;
  expect_refused(s, s.deploy("bad_unique", "unique.so"), errc::unloadable, "GNU unique symbol");
}

TEST_CASE("loading refuses a module whose factory throws and reports the exception", "[modules]") {
  sandbox s;
  expect_refused(s, s.deploy("bad_factory", "factory.so"), errc::factory_failed,
                 "std::runtime_error: no configuration for bad_factory");
}

TEST_CASE("loading the same content again gives a fresh copy and never the old dlopen handle", "[modules]") {
  sandbox s;
  REQUIRE(modules::load(s.deploy("greeter_v1", "a.so")));
  auto old_handler = modules::create<greeter>("greeter");
  std::string first = info("greeter", "1").staged_path;
  // Identical bytes under another name while the first copy is still in use.
  REQUIRE(modules::load(s.deploy("greeter_v1", "b.so")));
  std::string second;
  int copies = 0;
  for (auto& v : modules::list())
    if (v.version == "1") {
      ++copies;
      if (v.state == "current") second = v.staged_path;
    }
  CHECK(copies == 2);
  CHECK(second != first);
  CHECK(mapped(first));
  CHECK(mapped(second));
  CHECK(modules::create<greeter>("greeter")->greet("x") == "v1 hello x #1");
  old_handler.reset();
  CHECK(wait_for([&] { return !mapped(first); }));
  CHECK(mapped(second));
  // Unloaded and loaded once more: a new dlopen of the same staged name.
  CHECK(modules::unload("greeter"));
  CHECK(wait_for([&] { return !mapped(second) && module_fixture::loaded_versions() == 0; }));
  REQUIRE(modules::load("a.so"));
  CHECK(modules::create<greeter>("greeter")->greet("y") == "v1 hello y #1");
}

TEST_CASE("a new file renamed over the loaded path is loaded as the next version", "[modules]") {
  sandbox s;
  REQUIRE(modules::load(s.deploy("greeter_v1", "greeter.so")));
  auto h1 = modules::create<greeter>("greeter");
  s.deploy("greeter_v2", "greeter.so");  // rename over the file v1 came from
  auto r = modules::load("greeter.so");
  INFO(module_fixture::why(r));
  REQUIRE(r);
  CHECK(r->version == "2");
  CHECK(h1->greet("a") == "v1 hello a #1");  // v1 runs from its staged copy
  CHECK(modules::create<greeter>("greeter")->greet("b") == "v2 hello b #1");
}

TEST_CASE("create refuses an unknown module with module_error", "[modules]") {
  sandbox s;
  CHECK_THROWS_AS(modules::create<greeter>("no_such_module"), herd::module_error);
  CHECK(modules::unload("no_such_module").code() == errc::no_such_module);
}
