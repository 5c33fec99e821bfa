// The loader's staging directories (actors/src/code/staging.hpp): a node that
// died before its atexit ran left /tmp/herd-modules-PID-XXXXXX behind; the
// next node to stage a module removes those of dead nodes, and nothing else.
#include "code/staging.hpp"

#include <herd/actors/module.hpp>

#include "module_sandbox.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

bool exists(const std::string& p) {
  struct stat st;
  return ::lstat(p.c_str(), &st) == 0;
}

void make_dir_with_file(const std::string& dir) {
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  int fd = ::open((dir + "/greeter.0123456789abcdef.so").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0500);
  REQUIRE(fd >= 0);
  ::close(fd);
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string boot_id() {
  std::string id = read_all("/proc/sys/kernel/random/boot_id");
  while (!id.empty() && id.back() == '\n') id.pop_back();
  return id;
}

// Field 22 of /proc/PID/stat: the process's start in ticks after boot.
std::string start_ticks(pid_t pid) {
  std::string stat = read_all("/proc/" + std::to_string(pid) + "/stat");
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 22; ++i) rest >> field;
  return field;
}

void write_owner(const std::string& dir, const std::string& record) {
  std::ofstream(dir + "/.owner") << record;
}

pid_t spawn(const char* prog, const char* arg) {
  pid_t pid = 0;
  char* argv[] = {const_cast<char*>(prog), const_cast<char*>(arg), nullptr};
  REQUIRE(::posix_spawnp(&pid, prog, nullptr, nullptr, argv, environ) == 0);
  return pid;
}

}  // namespace

TEST_CASE("staging directories left by dead nodes are removed - not live nodes', not symlinks, not other names",
          "[modules]") {
  char t[] = "/tmp/herd-staging-test-XXXXXX";
  REQUIRE(::mkdtemp(t));
  const std::string parent = t;
  // A pid that was alive and is gone.
  pid_t dead = spawn("true", nullptr);
  REQUIRE(::waitpid(dead, nullptr, 0) == dead);
  // A live process that started after its "staging directory" last changed:
  // a reused pid, not the node that made it.
  pid_t reused = spawn("sleep", "600");  // an OS process that stays alive (killed at the end)

  const std::string of_dead = parent + "/herd-modules-" + std::to_string(dead) + "-Ab12Cd";
  const std::string of_reused = parent + "/herd-modules-" + std::to_string(reused) + "-Ef34Gh";
  const std::string ours = parent + "/herd-modules-" + std::to_string(::getpid()) + "-Ij56Kl";
  const std::string of_init = parent + "/herd-modules-1-Mn78Op";  // alive since boot
  const std::string other_name = parent + "/herd-modules-" + std::to_string(dead) + "-toolongname";
  const std::string link = parent + "/herd-modules-" + std::to_string(dead) + "-Qr90St";
  const std::string target = parent + "/target";
  for (const auto& d : {of_dead, of_reused, ours, of_init, other_name, target}) make_dir_with_file(d);
  REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
  // With the owner record a node writes: the pid's boot and start must match.
  pid_t live = spawn("sleep", "600");  // another live OS process
  const std::string live_owned = parent + "/herd-modules-" + std::to_string(live) + "-Uv12Wx";
  const std::string reused_owned = parent + "/herd-modules-" + std::to_string(reused) + "-Yz34Ab";
  const std::string rebooted = parent + "/herd-modules-1-Cd56Ef";
  for (const auto& d : {live_owned, reused_owned, rebooted}) make_dir_with_file(d);
  write_owner(live_owned, boot_id() + " " + start_ticks(live) + "\n");
  write_owner(reused_owned, boot_id() + " 1\n");  // `reused` started later than tick 1
  write_owner(rebooted, "00000000-0000-0000-0000-000000000000 " + start_ticks(1) + "\n");
  // Changed an hour ago (before `reused` started); so did init's, and init is older still.
  struct timespec hour_ago[2] = {{::time(nullptr) - 3600, 0}, {::time(nullptr) - 3600, 0}};
  REQUIRE(::utimensat(AT_FDCWD, of_reused.c_str(), hour_ago, 0) == 0);

  herd::detail::staging::remove_stale_staging_dirs(parent);

  CHECK_FALSE(exists(of_dead));
  CHECK_FALSE(exists(of_reused));
  CHECK(exists(ours + "/greeter.0123456789abcdef.so"));
  CHECK(exists(of_init + "/greeter.0123456789abcdef.so"));
  CHECK(exists(other_name + "/greeter.0123456789abcdef.so"));
  CHECK(exists(link));                                          // the symlink is not followed...
  CHECK(exists(target + "/greeter.0123456789abcdef.so"));       // ...nor emptied through
  CHECK(exists(live_owned + "/greeter.0123456789abcdef.so"));
  CHECK_FALSE(exists(reused_owned));
  CHECK_FALSE(exists(rebooted));

  // A node's own staging directory carries its record (wherever this
  // process made it: $TMPDIR may have been read by an earlier test).
  std::string error;
  std::string mine = herd::detail::staging::staging_dir(error);
  INFO(error);
  REQUIRE_FALSE(mine.empty());
  CHECK(read_all(mine + "/.owner") == boot_id() + " " + start_ticks(::getpid()) + "\n");
  ::kill(live, SIGKILL);
  ::waitpid(live, nullptr, 0);

  ::kill(reused, SIGKILL);
  ::waitpid(reused, nullptr, 0);
  std::string cmd = "rm -rf '" + parent + "'";
  CHECK(std::system(cmd.c_str()) == 0);
}

// Run only as the child of the next test (hidden: not registered with CTest).
TEST_CASE("child: load a module in a fresh process", "[.][staging_child]") {
  module_fixture::sandbox s;
  auto r = herd::modules::load(s.deploy("greeter_v1", "greeter.so"));
  INFO(module_fixture::why(r));
  REQUIRE(r);
}

TEST_CASE("a node's first load removes the staging directory a dead node left in its TMPDIR", "[modules]") {
  char t[] = "/tmp/herd-staging-run-XXXXXX";
  REQUIRE(::mkdtemp(t));
  const std::string parent = t;
  pid_t dead = spawn("true", nullptr);
  REQUIRE(::waitpid(dead, nullptr, 0) == dead);
  const std::string stale = parent + "/herd-modules-" + std::to_string(dead) + "-Gh78Ij";
  make_dir_with_file(stale);

  // A fresh process (its staging directory not yet made), with TMPDIR = parent.
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::string_view(*e).rfind("TMPDIR=", 0) != 0) env.emplace_back(*e);
  env.push_back("TMPDIR=" + parent);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  char exe[] = "/proc/self/exe";
  char name[] = "child: load a module in a fresh process";
  char warn[] = "-w";
  char no_tests[] = "NoTests";
  char* argv[] = {exe, name, warn, no_tests, nullptr};
  pid_t child = 0;
  REQUIRE(::posix_spawn(&child, exe, nullptr, nullptr, argv, envp.data()) == 0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_FALSE(exists(stale));
  std::string cmd = "rm -rf '" + parent + "'";
  CHECK(std::system(cmd.c_str()) == 0);
}
