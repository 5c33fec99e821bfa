// The observer socket's path is checked component by component: a symlink
// or a directory another user could change anywhere on the way refuses the
// start (a symlink planted in a shared directory would otherwise let its
// owner swap our node for theirs after we checked). Making a file owned by
// another user takes root, as the suite runs in CI; elsewhere this says so.
#include "observer_fixture.hpp"
#include "support/skip.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <vector>

using namespace observer_test;

namespace {

// Under a fresh private directory: a sticky world-writable "shared" (a
// /tmp of our own) and a private "mine" that the node's user owns.
struct tree {
  std::string base = private_dir();
  std::string shared = base + "/shared";
  std::string mine = base + "/mine";
  tree() {
    REQUIRE(::mkdir(shared.c_str(), 0700) == 0);
    REQUIRE(::chmod(shared.c_str(), 01777) == 0);
    REQUIRE(::mkdir(mine.c_str(), 0700) == 0);
  }
  ~tree() {
    std::string cmd = "rm -rf '" + base + "'";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "cannot remove %s\n", base.c_str());
  }
  // A symlink at `at` to `target`, owned by `uid`.
  void symlink(const std::string& target, const std::string& at, uid_t uid) const {
    REQUIRE(::symlink(target.c_str(), at.c_str()) == 0);
    REQUIRE(::lchown(at.c_str(), uid, uid) == 0);
  }
};

constexpr uid_t nobody = 65534;

// One connect to the Unix socket at path, with the fixture's client. No
// Catch macro: a watcher thread calls it, and Catch's assertions are for the
// test's own thread.
bool connects(const std::string& path) {
  try {
    client c(path);
    return true;
  } catch (const std::runtime_error&) {
    return false;
  }
}

// The names in dir, sorted, without . and ..
std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  REQUIRE(d);
  while (dirent* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("start refuses a socket path through a symlink or a directory another user could change") {
  if (::geteuid() != 0) {
    HERD_SKIP("not root: cannot make a file owned by another user");
  }
  live_node n(1, [](root_ctx&) {});
  tree t;

  // The attack: another user's symlink in the shared directory, aimed at our
  // private directory for now.
  t.symlink(t.mine, t.shared + "/planted", nobody);
  auto planted = herd::observer::start({.path = t.shared + "/planted/s.sock"});
  CHECK(!planted);
  INFO(planted.error);
  CHECK(planted.error.find(t.shared + "/planted is a symlink owned by uid 65534") != std::string::npos);
  struct stat st {};
  CHECK(::lstat((t.mine + "/s.sock").c_str(), &st) != 0);  // nothing was bound behind it

  // The same symlink owned by us is ours to point: accepted.
  t.symlink(t.mine, t.shared + "/ours", ::geteuid());
  auto ours = herd::observer::start({.path = t.shared + "/ours/s.sock"});
  INFO(ours.error);
  CHECK(ours);
  ours.observer.reset();

  // A directory on the way that others may write to and that is not sticky:
  // they could rename "mine" away and put their own in its place.
  std::string open = t.base + "/open";
  REQUIRE(::mkdir(open.c_str(), 0700) == 0);
  REQUIRE(::chmod(open.c_str(), 0777) == 0);
  REQUIRE(::mkdir((open + "/mine").c_str(), 0700) == 0);
  auto through_open = herd::observer::start({.path = open + "/mine/s.sock"});
  CHECK(!through_open);
  CHECK(through_open.error.find("directory " + open + " can be written by group or others and is not sticky") !=
        std::string::npos);

  // A directory on the way that another user owns.
  std::string theirs = t.base + "/theirs";
  REQUIRE(::mkdir(theirs.c_str(), 0755) == 0);
  REQUIRE(::mkdir((theirs + "/mine").c_str(), 0700) == 0);
  REQUIRE(::chown(theirs.c_str(), nobody, nobody) == 0);
  auto through_theirs = herd::observer::start({.path = theirs + "/mine/s.sock"});
  CHECK(!through_theirs);
  CHECK(through_theirs.error.find("directory " + theirs + " belongs to uid 65534") != std::string::npos);

  client c(n.socket());  // the node's own observer is untouched
  CHECK(c.ask(req("modules"))["ok"] == true);
}

TEST_CASE("the socket path appears only once it accepts connections, and no staged name is left behind") {
  // A client that waits for the file and then connects (as scripts and the
  // tests do) must never be refused: the node binds a name of its own and
  // links the path only after listen. A watcher connects the moment the path
  // shows, over many starts; a refusal would be the window between bind and
  // listen.
  live_node n(1, [](root_ctx&) {});
  const std::string dir = private_dir();
  const std::string path = dir + "/s.sock";
  int refused = 0, seen = 0;
  for (int round = 0; round < 200; ++round) {
    std::atomic<bool> stop{false};
    std::thread watcher([&] {
      struct stat st {};
      while (!stop.load(std::memory_order_relaxed))
        if (::lstat(path.c_str(), &st) == 0) {
          ++seen;
          if (!connects(path)) ++refused;
          return;
        }
    });
    auto s = herd::observer::start({.path = path});
    stop.store(true, std::memory_order_relaxed);
    watcher.join();
    INFO(s.error);
    REQUIRE(s);
    s.observer.reset();  // unlinks the path
  }
  CHECK(refused == 0);
  WARN("the watcher saw the path appear " << seen << " times in 200 starts");

  // What is left in the directory is the socket alone (the node's staged name
  // is gone), and a staged name a crashed node of the same pid left is taken over.
  const std::string staged = dir + "/.herd-observer-" + std::to_string(::getpid());
  REQUIRE(::mknod(staged.c_str(), S_IFREG | 0600, 0) == 0);
  auto s = herd::observer::start({.path = path});
  INFO(s.error);
  REQUIRE(s);
  CHECK(entries(dir) == std::vector<std::string>{"s.sock"});
  CHECK(connects(path));
  s.observer.reset();
  CHECK(entries(dir).empty());
  ::rmdir(dir.c_str());
}
