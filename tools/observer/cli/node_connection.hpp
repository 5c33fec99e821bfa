// One connection to a node's observer socket: newline-framed JSON requests
// out, reply lines in, the connect, every write and every read bounded by a
// deadline (a hung node is a node_failure, never a hang). Not thread-safe: one owner.
#pragma once
#include "observer_json.hpp"

#include <chrono>
#include <string>

namespace observer_cli {

using clock_type = std::chrono::steady_clock;

// How long a node may take to answer one request.
inline constexpr std::chrono::seconds reply_timeout{5};

class node_connection {
 public:
  // Connects to the Unix socket at `path` within reply_timeout; throws
  // node_failure ("no node at PATH (reason)", a path through another user's
  // symlink or writable directory, a node that never accepts, a server
  // running as a uid neither ours nor root) or usage_error (the path does not
  // fit a sockaddr_un).
  explicit node_connection(std::string path);
  ~node_connection();
  node_connection(const node_connection&) = delete;
  node_connection& operator=(const node_connection&) = delete;

  // Sends `fields` plus "v":1 and a fresh "id"; returns that id.
  long send(json fields);

  // The next reply line, parsed, checked to be a version-1 object, and
  // checked against `id` when it is a reply to a request of ours. An
  // "ok":false line throws node_failure naming the node's code and message
  // (the node sends `refused` and `busy` without an id, so that check comes
  // first). Throws node_failure on timeout, EOF, or a malformed line.
  json read_reply(long id, clock_type::time_point deadline);

  // send + read_reply + the "result" object.
  json call(json fields);

  const std::string& path() const { return path_; }

 private:
  std::string read_line(clock_type::time_point deadline);

  std::string path_;
  int fd_ = -1;
  long next_id_ = 1;
  std::string pending_;  // bytes read past the last line
};

}  // namespace observer_cli
