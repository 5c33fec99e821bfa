// See unix_socket.hpp.
#include "unix_socket.hpp"

#include "socket_path.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace herd::observer {
namespace {

std::string errno_text(int e) { return std::strerror(e); }

std::string octal(mode_t m) {
  char b[8];
  std::snprintf(b, sizeof b, "%04o", unsigned(m & 07777));
  return b;
}

}  // namespace

int open_unix_listener(const std::string& path, std::string* error) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    *error = "observer socket path must be 1.." + std::to_string(sizeof addr.sun_path - 1) + " bytes: '" + path + "'";
    return -1;
  }
  // Every component, not just the directory: see socket_path.hpp.
  auto resolved = herd::observer_path::check_socket_path(path, ::geteuid());
  if (!resolved.error.empty()) {
    *error = "observer socket path " + path + ": " + resolved.error;
    return -1;
  }
  const std::string& dir = resolved.directory;
  struct stat ds {};
  if (::stat(dir.c_str(), &ds) != 0) {
    *error = "observer socket directory " + dir + ": " + errno_text(errno);
    return -1;
  }
  if (!S_ISDIR(ds.st_mode)) {
    *error = "observer socket directory " + dir + " is not a directory";
    return -1;
  }
  if (ds.st_uid != ::geteuid()) {
    *error = "observer socket directory " + dir + " belongs to uid " + std::to_string(ds.st_uid) +
             ", not to this node's user (uid " + std::to_string(::geteuid()) + ")";
    return -1;
  }
  if (ds.st_mode & (S_IXGRP | S_IXOTH)) {
    *error = "observer socket directory " + dir + " can be entered by group or others (mode " + octal(ds.st_mode) +
             "); use a directory only this user can enter (chmod 700 " + dir + ")";
    return -1;
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  struct stat ps {};
  if (::lstat(path.c_str(), &ps) == 0) {
    if (!S_ISSOCK(ps.st_mode)) {
      *error = "observer socket path " + path + " exists and is not a socket";
      return -1;
    }
    int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool live = probe >= 0 && ::connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    if (probe >= 0) ::close(probe);
    if (live) {
      *error = "observer socket " + path + " is in use by another node";
      return -1;
    }
    ::unlink(path.c_str());  // stale: its node is gone
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = "observer socket: " + errno_text(errno);
    return -1;
  }
  // Bound under a name of its own in the same directory and linked to `path`
  // only once it listens: whoever sees the path can connect (a client that
  // waited for the file got ECONNREFUSED between bind and listen), and link()
  // fails if another node took the path meanwhile, as bind would have. A
  // directory too long for that name binds `path` itself.
  const std::string staged = dir + "/.herd-observer-" + std::to_string(::getpid());
  const bool stage = staged.size() < sizeof addr.sun_path;
  sockaddr_un at = addr;
  if (stage) {
    std::memcpy(at.sun_path, staged.c_str(), staged.size() + 1);
    ::unlink(staged.c_str());  // a crashed node's, with our pid: the directory is ours alone
  }
  const char* bound = at.sun_path;
  // The directory is private (checked above), so nobody can reach the file
  // between bind and chmod; no process-wide umask change is needed.
  if (::bind(fd, reinterpret_cast<sockaddr*>(&at), sizeof at) != 0 || ::chmod(bound, 0600) != 0 ||
      ::listen(fd, 64) != 0 || (stage && ::link(bound, path.c_str()) != 0)) {
    *error = "observer socket " + path + ": " + errno_text(errno);
    ::close(fd);
    ::unlink(bound);
    return -1;
  }
  if (stage) ::unlink(bound);
  return fd;
}

long peer_uid(int fd) {
  ucred c{};
  socklen_t len = sizeof c;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c, &len) != 0) return -1;
  return long(c.uid);
}

bool peer_allowed(long uid) { return uid == 0 || uid == long(::geteuid()); }

}  // namespace herd::observer
