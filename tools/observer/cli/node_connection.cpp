#include "node_connection.hpp"

#include "cli_error.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace observer_cli {
namespace {

// A reply longer than this is not one the protocol would send (the biggest, a
// 100,000-process list, is ~15 MB); stop rather than eat memory forever.
constexpr std::size_t max_reply_bytes = 64u << 20;

}  // namespace

node_connection::node_connection(std::string path) : path_(std::move(path)) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path_.size() >= sizeof addr.sun_path)
    throw usage_error("--socket: '" + path_ + "' is longer than a Unix socket path may be (" +
                      std::to_string(sizeof addr.sun_path - 1) + " bytes)");
  std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw node_failure(std::string("cannot create a socket (") + std::strerror(errno) + ")");
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    int e = errno;
    ::close(fd_);
    fd_ = -1;
    throw node_failure("no node at " + path_ + " (" + std::strerror(e) + ")");
  }
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
  while (off < line.size()) {
    // MSG_NOSIGNAL: a node that went away is an error to report, not SIGPIPE.
    ssize_t n = ::send(fd_, line.data() + off, line.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
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
    if (n < 0 && errno == EINTR) continue;
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
  json reply = json::parse(line, nullptr, /*allow_exceptions=*/false);
  auto malformed = [&](const std::string& why) {
    std::string shown = line.size() > 80 ? line.substr(0, 80) + "..." : line;
    return node_failure("malformed reply from the node at " + path_ + ": " + why + ": " + shown);
  };
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
