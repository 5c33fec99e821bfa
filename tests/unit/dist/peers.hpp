// Peers for the distribution tests: BEAM nodes (erl) and herd nodes
// (dist_node_probe) started as processes with posix_spawn, their output in a
// file, stopped by PID (SIGKILL) when the test ends.
#pragma once
#include <herd/dist/node.hpp>

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace herd::test {

class peer_process {
 public:
  peer_process() = default;
  explicit peer_process(const std::vector<std::string>& argv);
  peer_process(peer_process&& o) noexcept;
  peer_process& operator=(peer_process&&) = delete;
  ~peer_process();

  bool started() const { return pid_ > 0; }
  ::pid_t pid() const { return pid_; }
  std::string output() const;  // what it wrote so far (stdout and stderr)
  // From a herd process (polls, 5 ms apart, until the deadline).
  bool wait_for(const std::string& needle, std::chrono::milliseconds limit = std::chrono::seconds(60)) const;
  // From a herd process: true once it has exited (reaped); its exit status.
  bool wait_exit(std::chrono::milliseconds limit, int* status = nullptr);
  void kill_now();
  void signal(int sig) const;

 private:
  ::pid_t pid_ = -1;
  std::string out_path_;
  bool reaped_ = false;
};

// "name@<short host>", unique to this test process.
std::string unique_sname(const std::string& base);
std::string short_host();
bool have_erl();

// Options for a herd node of this test process: a unique short name made
// from `base`, and `cookie`.
herd::dist::dist_options test_node_options(const std::string& base, const std::string& cookie);

// The node's log goes to a file for this object's life (a test looks for a
// line in it), then back to stderr.
class log_to_file {
 public:
  explicit log_to_file(const std::string& tag);
  ~log_to_file();
  log_to_file(const log_to_file&) = delete;
  log_to_file& operator=(const log_to_file&) = delete;
  std::string text() const;

 private:
  std::string path_;
};

// Argument lists for `erl -sname S -setcookie C -noshell -eval E`.
std::vector<std::string> erl_args(const std::string& sname, const std::string& cookie, const std::string& eval);

}  // namespace herd::test
