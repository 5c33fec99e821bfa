// See socket_path.hpp.
#include "socket_path.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <vector>

namespace herd::observer_path {
namespace {

// Linux's own limit on symlinks followed in one lookup.
constexpr int max_symlinks = 40;

std::vector<std::string> components(const std::string& p) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < p.size()) {
    std::size_t j = p.find('/', i);
    if (j == std::string::npos) j = p.size();
    if (j > i) out.push_back(p.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

std::string octal(mode_t m) {
  char b[8];
  std::snprintf(b, sizeof b, "%04o", unsigned(m & 07777));
  return b;
}

bool trusted_owner(uid_t owner, uid_t uid) { return owner == 0 || owner == uid; }

std::string who(uid_t owner, uid_t uid) {
  return "uid " + std::to_string(owner) + ", neither this user (uid " + std::to_string(uid) + ") nor root";
}

// Empty when another user can neither replace nor rename what is in `dir`.
std::string unsafe_directory(const std::string& dir, const struct stat& st, uid_t uid) {
  if (!trusted_owner(st.st_uid, uid)) return "directory " + dir + " belongs to " + who(st.st_uid, uid);
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
    return "directory " + dir + " can be written by group or others and is not sticky (mode " + octal(st.st_mode) + ")";
  return "";
}

}  // namespace

resolved_socket_path check_socket_path(const std::string& path, uid_t uid) {
  resolved_socket_path r;
  if (path.empty()) {
    r.error = "the path is empty";
    return r;
  }
  std::string full = path;
  if (path.front() != '/') {
    char cwd[4096];
    if (!::getcwd(cwd, sizeof cwd)) {
      r.error = std::string("cannot tell the working directory (") + std::strerror(errno) + ")";
      return r;
    }
    full = std::string(cwd) + "/" + path;
  }
  struct stat st {};
  if (::lstat("/", &st) != 0 || !(r.error = unsafe_directory("/", st, uid)).empty()) {
    if (r.error.empty()) r.error = std::string("/: ") + std::strerror(errno);
    return r;
  }
  auto parts = components(full);
  std::deque<std::string> todo(parts.begin(), parts.end());
  std::string cur;  // resolved and checked so far; "" is the root
  int links = 0;
  while (!todo.empty()) {
    std::string c = std::move(todo.front());
    todo.pop_front();
    if (c == ".") continue;
    if (c == "..") {  // an ancestor: checked on the way down
      cur.erase(cur.empty() ? 0 : cur.rfind('/'));
      continue;
    }
    std::string next = cur + "/" + c;
    bool last = todo.empty();
    if (::lstat(next.c_str(), &st) != 0) {
      if (errno == ENOENT && last) {
        r.directory = cur.empty() ? "/" : cur;
        return r;
      }
      r.sys_errno = errno;
      r.error = next + ": " + std::strerror(errno);
      return r;
    }
    if (S_ISLNK(st.st_mode)) {
      if (!trusted_owner(st.st_uid, uid)) {
        r.error = next + " is a symlink owned by " + who(st.st_uid, uid) + ": its owner can point it anywhere";
        return r;
      }
      if (++links > max_symlinks) {
        r.error = path + ": more than " + std::to_string(max_symlinks) + " symlinks";
        return r;
      }
      std::vector<char> target(std::size_t(st.st_size) + 2);
      ssize_t n = ::readlink(next.c_str(), target.data(), target.size());
      if (n < 0 || std::size_t(n) >= target.size()) {
        r.error = next + ": cannot read the symlink" + (n < 0 ? std::string(" (") + std::strerror(errno) + ")" : "");
        return r;
      }
      std::string t(target.data(), std::size_t(n));
      auto tp = components(t);
      todo.insert(todo.begin(), tp.begin(), tp.end());
      if (!t.empty() && t.front() == '/') cur.clear();
      continue;
    }
    if (last) {
      r.directory = cur.empty() ? "/" : cur;
      r.exists = true;
      return r;
    }
    if (!S_ISDIR(st.st_mode)) {
      r.error = next + " is not a directory";
      return r;
    }
    if (!(r.error = unsafe_directory(next, st, uid)).empty()) return r;
    cur = next;
  }
  r.error = path + " names a directory, not a socket";
  return r;
}

}  // namespace herd::observer_path
