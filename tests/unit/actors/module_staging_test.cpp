// The loader's staging directories (actors/src/code/staging.hpp): a node that
// died before its atexit ran left /tmp/herd-modules-PID-XXXXXX behind; the
// next node to stage a module removes those of dead nodes, and nothing else.
#include "code/staging.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

extern char** environ;

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
  pid_t reused = spawn("sleep", "600");

  const std::string of_dead = parent + "/herd-modules-" + std::to_string(dead) + "-Ab12Cd";
  const std::string of_reused = parent + "/herd-modules-" + std::to_string(reused) + "-Ef34Gh";
  const std::string ours = parent + "/herd-modules-" + std::to_string(::getpid()) + "-Ij56Kl";
  const std::string of_init = parent + "/herd-modules-1-Mn78Op";  // alive since boot
  const std::string other_name = parent + "/herd-modules-" + std::to_string(dead) + "-toolongname";
  const std::string link = parent + "/herd-modules-" + std::to_string(dead) + "-Qr90St";
  const std::string target = parent + "/target";
  for (const auto& d : {of_dead, of_reused, ours, of_init, other_name, target}) make_dir_with_file(d);
  REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
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

  ::kill(reused, SIGKILL);
  ::waitpid(reused, nullptr, 0);
  std::string cmd = "rm -rf '" + parent + "'";
  CHECK(std::system(cmd.c_str()) == 0);
}
