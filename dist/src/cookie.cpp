#include "cookie.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

namespace herd::dist::detail {

namespace {

std::string sys_error(const std::string& what, int e) { return what + ": " + std::strerror(e); }

result<std::string> create_cookie(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400);
  if (fd < 0) {
    int e = errno;
    return error{errc::cookie, sys_error("cannot create cookie file " + path, e)};
  }
  std::random_device rd;
  std::string c;
  for (int i = 0; i < 20; ++i) c += char('A' + rd() % 26);
  bool ok = ::write(fd, c.data(), c.size()) == ssize_t(c.size());
  int e = errno;
  ::close(fd);
  if (!ok) return error{errc::cookie, sys_error("cannot write cookie file " + path, e)};
  return c;
}

}  // namespace

std::string default_cookie_path() {
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.erlang.cookie";
}

result<std::string> read_cookie_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT) return create_cookie(path);
    return error{errc::cookie, sys_error("cannot open cookie file " + path, e)};
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || (st.st_mode & 077) != 0) {
    ::close(fd);
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
    return error{errc::cookie, "cookie file " + path + " must be accessible by its owner only (mode " + mode +
                                   "; chmod 400 it)"};
  }
  std::string c(256, '\0');
  ssize_t n = ::read(fd, c.data(), c.size());
  ::close(fd);
  if (n < 0) return error{errc::cookie, "cannot read cookie file " + path};
  c.resize(std::size_t(n));
  while (!c.empty() && (c.back() == '\n' || c.back() == '\r' || c.back() == ' ')) c.pop_back();
  if (c.empty()) return error{errc::cookie, "cookie file " + path + " is empty"};
  return c;
}

}  // namespace herd::dist::detail
