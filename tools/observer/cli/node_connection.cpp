#include "node_connection.hpp"

#include "cli_error.hpp"
#include "socket_path.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace observer_cli {
namespace {

// A reply longer than this is not one the protocol would send (the biggest, a
// 100,000-process list, is ~15 MB); stop rather than eat memory forever.
constexpr std::size_t max_reply_bytes = 64u << 20;

// The deepest reply of the protocol is a tree, which the node cuts at 64
// nested supervisors (~130 levels of JSON). A line nested far deeper would
// overflow the stack of every recursive walk over it (dump(), the views), so
// it is refused before it is parsed.
constexpr std::size_t max_reply_depth = 256;

int ms_left(clock_type::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

// Whether the JSON text nests arrays and objects deeper than `limit`
// (brackets inside strings do not count).
bool nests_deeper_than(const std::string& text, std::size_t limit) {
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

}  // namespace

node_connection::node_connection(std::string path) : path_(std::move(path)) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path_.size() >= sizeof addr.sun_path)
    throw usage_error("--socket: '" + path_ + "' is longer than a Unix socket path may be (" +
                      std::to_string(sizeof addr.sun_path - 1) + " bytes)");
  std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
  // Another user's symlink or writable directory on the way could lead us to
  // a socket of theirs (tools/observer/common/socket_path.hpp).
  auto resolved = herd::observer_path::check_socket_path(path_, ::geteuid());
  if (resolved.sys_errno != 0) throw node_failure("no node at " + path_ + " (" + std::strerror(resolved.sys_errno) + ")");
  if (!resolved.error.empty()) throw node_failure("refusing the socket path " + path_ + ": " + resolved.error);
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) throw node_failure(std::string("cannot create a socket (") + std::strerror(errno) + ")");
  auto fail = [&](const std::string& why) {
    ::close(fd_);
    fd_ = -1;
    return node_failure(why);
  };
  // Non-blocking, so a node that never accepts cannot hold us past the
  // deadline: Linux answers EAGAIN while the node's backlog is full (a
  // blocking connect would sleep until there is room, for ever).
  auto deadline = clock_type::now() + reply_timeout;
  int pause_ms = 1;
  for (;;) {
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) break;
    int e = errno;
    if (e == EINTR) continue;
    if (e == EISCONN) break;  // an interrupted attempt completed meanwhile
    if (e == EINPROGRESS) {  // not on Linux for AF_UNIX, but POSIX allows it
      pollfd p{fd_, POLLOUT, 0};
      int r;
      while ((r = ::poll(&p, 1, ms_left(deadline))) < 0 && errno == EINTR) {
      }
      socklen_t len = sizeof e;
      if (r <= 0 || ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &e, &len) != 0) e = EAGAIN;
      if (e == 0) break;
    }
    if (e != EAGAIN) throw fail("no node at " + path_ + " (" + std::strerror(e) + ")");
    if (ms_left(deadline) == 0)
      throw fail("the node at " + path_ + " did not accept the connection within " +
                 std::to_string(reply_timeout.count()) + " s (its backlog is full: it is hung or overloaded)");
    ::poll(nullptr, 0, std::min(pause_ms, ms_left(deadline)));
    pause_ms = std::min(pause_ms * 2, 50);
  }
  // Whoever serves the socket must be the node's user (ours) or root: the
  // path check above cannot see a socket file swapped in a race.
  ucred peer{};
  socklen_t len = sizeof peer;
  if (::getsockopt(fd_, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0)
    throw fail("cannot tell who serves " + path_ + " (" + std::strerror(errno) + ")");
  if (peer.uid != 0 && peer.uid != ::geteuid())
    throw fail("refusing the node at " + path_ + ": it runs as uid " + std::to_string(peer.uid) +
               ", neither this user (uid " + std::to_string(::geteuid()) + ") nor root");
}

node_connection::~node_connection() {
  if (fd_ >= 0) ::close(fd_);
}

long node_connection::send(json fields) {
  long id = next_id_++;
  fields["v"] = 1;
  fields["id"] = id;
  std::string line = fields.dump() + "\n";
  std::size_t off = 0;
  auto deadline = clock_type::now() + reply_timeout;
  while (off < line.size()) {
    // MSG_NOSIGNAL: a node that went away is an error to report, not SIGPIPE.
    ssize_t n = ::send(fd_, line.data() + off, line.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {  // the node is not reading: wait for room, not for ever
      if (ms_left(deadline) == 0)
        throw node_failure("the node at " + path_ + " did not take the request within " +
                           std::to_string(reply_timeout.count()) + " s");
      pollfd p{fd_, POLLOUT, 0};
      ::poll(&p, 1, ms_left(deadline));
      continue;
    }
    if (n < 0) throw node_failure("the node at " + path_ + " went away (" + std::strerror(errno) + ")");
    off += static_cast<std::size_t>(n);
  }
  return id;
}

std::string node_connection::read_line(clock_type::time_point deadline) {
  for (;;) {
    if (auto nl = pending_.find('\n'); nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return line;
    }
    if (pending_.size() > max_reply_bytes)
      throw node_failure("malformed reply from the node at " + path_ + ": a line longer than 64 MiB");
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
    if (left.count() <= 0)
      throw node_failure("no reply from the node at " + path_ + " within " +
                         std::to_string(reply_timeout.count()) + " s");
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw node_failure(std::string("poll: ") + std::strerror(errno));
    if (r == 0) continue;  // the deadline check above reports it
    char buf[65536];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) throw node_failure("the node at " + path_ + " went away (" + std::strerror(errno) + ")");
    if (n == 0) {
      if (pending_.empty()) throw node_failure("the node at " + path_ + " closed the connection");
      throw node_failure("the node at " + path_ + " closed the connection in the middle of a reply");
    }
    pending_.append(buf, static_cast<std::size_t>(n));
  }
}

json node_connection::read_reply(long id, clock_type::time_point deadline) {
  std::string line = read_line(deadline);
  auto malformed = [&](const std::string& why) {
    std::string shown = line.size() > 80 ? line.substr(0, 80) + "..." : line;
    return node_failure("malformed reply from the node at " + path_ + ": " + why + ": " + shown);
  };
  if (nests_deeper_than(line, max_reply_depth))
    throw malformed("nested deeper than " + std::to_string(max_reply_depth) + " levels");
  json reply = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (reply.is_discarded()) throw malformed("not JSON");
  if (!reply.is_object()) throw malformed("not a JSON object");
  if (!reply.contains("ok") || !reply["ok"].is_boolean()) throw malformed("no boolean \"ok\"");
  if (!reply["ok"].get<bool>()) {
    const json& err = reply.contains("error") ? reply["error"] : json();
    if (!err.is_object() || !err.contains("code") || !err["code"].is_string()) throw malformed("an error without a code");
    std::string msg = err.contains("message") && err["message"].is_string() ? err["message"].get<std::string>() : "";
    std::string code = err["code"].get<std::string>();
    throw node_error_reply(code, "the node answered " + code + (msg.empty() ? "" : ": " + msg));
  }
  if (!reply.contains("v") || reply["v"] != 1) throw malformed("not protocol version 1");
  if (!reply.contains("id") || reply["id"] != id) throw malformed("a reply to another request (id)");
  return reply;
}

json node_connection::call(json fields) {
  long id = send(std::move(fields));
  json reply = read_reply(id, clock_type::now() + reply_timeout);
  if (!reply.contains("result") || !reply["result"].is_object()) {
    std::string shown = reply.dump();
    throw node_failure("malformed reply from the node at " + path_ + ": no \"result\" object: " +
                       (shown.size() > 80 ? shown.substr(0, 80) + "..." : shown));
  }
  return reply["result"];
}

}  // namespace observer_cli
