#include "peers.hpp"

#include <herd/actors/logger.hpp>
#include <herd/actors/process.hpp>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace herd::test {

peer_process::peer_process(const std::vector<std::string>& argv) {
  static int serial = 0;
  out_path_ = "/tmp/herd_dist_peer_" + std::to_string(::getpid()) + "_" + std::to_string(++serial) + ".log";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  if (::posix_spawnp(&pid_, args[0], &fa, nullptr, args.data(), environ) != 0) pid_ = -1;
  posix_spawn_file_actions_destroy(&fa);
}

peer_process::peer_process(peer_process&& o) noexcept
    : pid_(o.pid_), out_path_(std::move(o.out_path_)), reaped_(o.reaped_) {
  o.pid_ = -1;
}

peer_process::~peer_process() {
  kill_now();
  if (!out_path_.empty()) ::unlink(out_path_.c_str());
}

std::string peer_process::output() const {
  std::ifstream f(out_path_);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool peer_process::wait_for(const std::string& needle, std::chrono::milliseconds limit) const {
  auto end = std::chrono::steady_clock::now() + limit;
  while (output().find(needle) == std::string::npos) {
    if (std::chrono::steady_clock::now() > end) return false;
    herd::sleep(std::chrono::milliseconds(5));  // the poll's interval
  }
  return true;
}

bool peer_process::wait_exit(std::chrono::milliseconds limit, int* status) {
  if (pid_ <= 0) return false;
  auto end = std::chrono::steady_clock::now() + limit;
  for (;;) {
    int st = 0;
    ::pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      if (status) *status = st;
      pid_ = -1;
      return true;
    }
    if (std::chrono::steady_clock::now() > end) return false;
    herd::sleep(std::chrono::milliseconds(5));  // the poll's interval
  }
}

void peer_process::kill_now() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int st = 0;
  ::waitpid(pid_, &st, 0);
  pid_ = -1;
}

void peer_process::signal(int sig) const {
  if (pid_ > 0) ::kill(pid_, sig);
}

std::string short_host() {
  char h[256] = {};
  ::gethostname(h, sizeof h - 1);
  std::string s = h;
  return s.substr(0, s.find('.'));
}

std::string unique_sname(const std::string& base) {
  static int n = 0;
  return base + "_" + std::to_string(::getpid()) + "_" + std::to_string(++n);
}

bool have_erl() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string d; std::getline(dirs, d, ':');)
    if (!d.empty() && ::access((d + "/erl").c_str(), X_OK) == 0) return true;
  return false;
}

std::vector<std::string> erl_args(const std::string& sname, const std::string& cookie, const std::string& eval) {
  return {"erl", "-sname", sname, "-setcookie", cookie, "-noshell", "-eval", eval};
}

herd::dist::dist_options test_node_options(const std::string& base, const std::string& cookie) {
  herd::dist::dist_options o;
  o.sname = unique_sname(base);
  o.cookie = cookie;
  return o;
}

log_to_file::log_to_file(const std::string& tag)
    : path_("/tmp/herd_" + tag + "_" + std::to_string(::getpid()) + ".log") {
  std::remove(path_.c_str());
  herd::set_log_file(path_);
}

log_to_file::~log_to_file() {
  herd::log_flush();
  herd::set_log_stderr();
  std::remove(path_.c_str());
}

std::string log_to_file::text() const {
  herd::log_flush();
  std::ifstream f(path_);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace herd::test
