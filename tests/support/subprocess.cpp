#include "subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

extern char** environ;

namespace herd::test {
namespace {

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

std::vector<std::string> merged_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  for (const std::string& kv : extra) {
    const std::string key = kv.substr(0, kv.find('=') + 1);
    std::erase_if(env, [&](const std::string& e) { return e.compare(0, key.size(), key) == 0; });
    env.push_back(kv);
  }
  return env;
}

struct fd_guard {
  int fd = -1;
  ~fd_guard() { reset(); }
  void reset() {
    if (fd >= 0) close(fd);
    fd = -1;
  }
};

}  // namespace

subprocess_result run_subprocess(const std::vector<std::string>& argv, const subprocess_options& options) {
  subprocess_result result;
  if (argv.empty()) {
    result.spawn_error = "empty argv";
    return result;
  }
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    result.spawn_error = "pipe2: " + errno_text(errno);
    return result;
  }
  fd_guard out_r{out_pipe[0]}, out_w{out_pipe[1]};
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.spawn_error = "pipe2: " + errno_text(errno);
    return result;
  }
  fd_guard err_r{err_pipe[0]}, err_w{err_pipe[1]};

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 clears close-on-exec on the copy, so only fds 1 and 2 reach the child.
  posix_spawn_file_actions_adddup2(&actions, out_w.fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_w.fd, STDERR_FILENO);

  std::vector<std::string> env = merged_environment(options.env);
  std::vector<char*> argv_c, env_c;
  for (const std::string& a : argv) argv_c.push_back(const_cast<char*>(a.c_str()));
  for (const std::string& e : env) env_c.push_back(const_cast<char*>(e.c_str()));
  argv_c.push_back(nullptr);
  env_c.push_back(nullptr);

  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv_c[0], &actions, nullptr, argv_c.data(), env_c.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    result.spawn_error = "posix_spawn " + argv[0] + ": " + errno_text(rc);
    return result;
  }
  result.started = true;
  out_w.reset();  // our copies of the write ends; EOF arrives when the child's close
  err_w.reset();

  // A pidfd becomes readable when the child exits, so one poll() waits for output and exit.
  fd_guard pidfd{int(syscall(SYS_pidfd_open, pid, 0))};
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  bool child_done = false;
  int status = 0;
  while (true) {
    if (pidfd.fd < 0 && !child_done) {
      // No pidfd (old kernel): poll the child between reads.
      pid_t r = waitpid(pid, &status, WNOHANG);
      if (r == pid) child_done = true;
    }
    if (child_done && out_r.fd < 0 && err_r.fd < 0) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      // A child that exited but left a grandchild holding the pipes did not time out.
      if (!child_done) {
        kill(pid, SIGKILL);  // the pid cannot be reused before we reap it below
        result.timed_out = true;
      }
      break;
    }
    pollfd fds[3];
    int n = 0;
    int out_i = -1, err_i = -1, pid_i = -1;
    if (out_r.fd >= 0) fds[out_i = n++] = {out_r.fd, POLLIN, 0};
    if (err_r.fd >= 0) fds[err_i = n++] = {err_r.fd, POLLIN, 0};
    if (pidfd.fd >= 0 && !child_done) fds[pid_i = n++] = {pidfd.fd, POLLIN, 0};
    const int wait_ms = (pidfd.fd < 0 && !child_done) ? std::min<long>(left.count(), 10) : left.count();
    if (poll(fds, nfds_t(n), wait_ms) < 0 && errno != EINTR) break;
    struct stream {
      int index;
      fd_guard* fd;
      std::string* sink;
    };
    for (const stream& s : {stream{out_i, &out_r, &result.out}, stream{err_i, &err_r, &result.err}}) {
      if (s.index < 0 || !(fds[s.index].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      const ssize_t got = read(s.fd->fd, buf, sizeof buf);
      if (got > 0) s.sink->append(buf, size_t(got));
      else if (got == 0 || errno != EINTR) s.fd->reset();
    }
    if (pid_i >= 0 && (fds[pid_i].revents & POLLIN)) child_done = true;
  }
  // Reap (after a kill, or after the pidfd said it exited); a grandchild may still hold the
  // pipes, which we stop reading.
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

}  // namespace herd::test
