// See staging.hpp.
#include "code/staging.hpp"

#include "code/elf_check.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <mutex>
#include <string_view>

namespace herd::detail::staging {
namespace {

using modules::errc;


std::string real_path(const std::string& p, int& err) {
  char buf[PATH_MAX];
  if (!::realpath(p.c_str(), buf)) {
    err = errno;
    return {};
  }
  err = 0;
  return buf;
}

// "" when safe, else what is wrong.
std::string unsafe_because(const struct stat& st) {
  uid_t me = ::geteuid();
  if (st.st_uid != me && st.st_uid != 0)
    return "owned by uid " + std::to_string(st.st_uid) + ", not by this process's user (" + std::to_string(me) + ")";
  if (st.st_mode & S_IWOTH) return "writable by others";
  if (st.st_mode & S_IWGRP) return "writable by its group";
  return {};
}

std::mutex g_dir_m;
std::string g_dir;  // under g_dir_m

}  // namespace

modules::error load_error(errc c, std::string msg) { return {c, std::move(msg)}; }

namespace {

const char* kind_of(mode_t m) {
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISLNK(m)) return "a symbolic link";
  return "not a regular file";
}

// Reads exactly n bytes at the current offset; "" or the error.
std::string read_exactly(int fd, char* to, std::size_t n) {
  std::size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd, to + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return std::string("read: ") + std::strerror(errno);
    if (r == 0) return "it shrank while being read";
    got += static_cast<std::size_t>(r);
  }
  return {};
}

struct fd_closer {
  int fd;
  ~fd_closer() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

modules::result<> read_candidate(const std::string& path, const std::string& module_dir, uint64_t max_size,
                                 candidate& out) {
  if (module_dir.empty())
    return load_error(errc::no_module_dir, "no module directory: call herd::modules::set_module_dir first");
  int err = 0;
  std::string dir = real_path(module_dir, err);
  if (dir.empty()) return load_error(errc::io_error, "module directory " + module_dir + ": " + std::strerror(err));
  struct stat dst;
  if (::stat(dir.c_str(), &dst) != 0 || !S_ISDIR(dst.st_mode))
    return load_error(errc::io_error, "module directory " + dir + " is not a directory");
  if (std::string why = unsafe_because(dst); !why.empty())
    return load_error(errc::unsafe_permissions, "module directory " + dir + " is " + why);

  // A relative path is relative to the module directory, never to the
  // working directory (which a daemon does not choose).
  std::string given = !path.empty() && path[0] == '/' ? path : dir + "/" + path;
  std::string file = real_path(given, err);
  if (file.empty()) {
    if (err == ENOENT) return load_error(errc::file_missing, given + ": no such file");
    return load_error(errc::io_error, given + ": " + std::strerror(err));
  }
  auto slash = file.rfind('/');
  if (file.substr(0, slash) != dir)
    return load_error(errc::outside_module_dir, file + " is not in the module directory " + dir);

  // Type and size from the name, before opening: opening a FIFO for reading
  // waits for a writer for ever, and a huge file must not be read at all.
  struct stat lst;
  if (::lstat(file.c_str(), &lst) != 0) {
    int e = errno;
    return load_error(e == ENOENT ? errc::file_missing : errc::io_error, file + ": " + std::strerror(e));
  }
  if (!S_ISREG(lst.st_mode)) return load_error(errc::io_error, file + " is " + kind_of(lst.st_mode) + ", not a regular file");
  auto too_large = [&](off_t size) {
    return load_error(errc::too_large, file + " is " + std::to_string(size) + " bytes, more than the " +
                                                std::to_string(max_size) +
                                                " a module may have (load_options::max_file_size)");
  };
  if (static_cast<uint64_t>(lst.st_size) > max_size) return too_large(lst.st_size);

  // O_NONBLOCK: should the name have become a FIFO since, open returns at
  // once (and fstat tells); it changes nothing for a regular file.
  fd_closer fd{::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)};
  if (fd.fd < 0) {
    int e = errno;
    return load_error(e == ENOENT ? errc::file_missing : errc::io_error, file + ": " + std::strerror(e));
  }
  struct stat fst;
  if (::fstat(fd.fd, &fst) != 0) return load_error(errc::io_error, file + ": fstat: " + std::strerror(errno));
  if (!S_ISREG(fst.st_mode)) return load_error(errc::io_error, file + " is " + kind_of(fst.st_mode) + ", not a regular file");
  if (fst.st_dev != lst.st_dev || fst.st_ino != lst.st_ino)
    return load_error(errc::io_error, file + " was replaced while being opened; try again");
  if (std::string why = unsafe_because(fst); !why.empty()) return load_error(errc::unsafe_permissions, file + " is " + why);
  if (static_cast<uint64_t>(fst.st_size) > max_size) return too_large(fst.st_size);

  // The ELF header first: a file that is not a shared object for this
  // machine is refused after 64 bytes, not after reading all of it.
  const std::size_t size = static_cast<std::size_t>(fst.st_size);
  std::string bytes(std::min<std::size_t>(size, elf::header_size), '\0');
  if (std::string e = read_exactly(fd.fd, bytes.data(), bytes.size()); !e.empty())
    return load_error(errc::io_error, file + ": " + e);
  if (elf::inspection h = elf::check_header(bytes); !h.ok)
    return load_error(errc::not_a_shared_object, file + ": " + h.why);
  bytes.resize(size);
  if (std::string e = read_exactly(fd.fd, bytes.data() + elf::header_size, size - elf::header_size); !e.empty())
    return load_error(errc::io_error, file + ": " + e);

  out.path = file;
  std::string base = file.substr(slash + 1);
  if (base.size() > 3 && base.compare(base.size() - 3, 3, ".so") == 0) base.resize(base.size() - 3);
  out.stem = base;
  out.bytes = std::move(bytes);
  return {};
}

std::string content_hash(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

namespace {

// Process `pid`'s start, in clock ticks after boot (field 22 of
// /proc/PID/stat: exact, and immune to wall-clock changes); -1 if unknown.
long long start_ticks(pid_t pid) {
  std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "re");
  if (!f) return -1;
  char buf[1024];
  std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');  // the command may hold spaces and parentheses
  for (int field = 2; field < 22 && p; ++field) p = std::strchr(p + 1, ' ');
  return p ? std::strtoll(p + 1, nullptr, 10) : -1;
}

std::string boot_id() {
  std::string id;
  if (std::FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "re")) {
    char buf[64] = {};
    if (std::fgets(buf, sizeof buf, f)) id = buf;
    std::fclose(f);
  }
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

// What a staging directory's ".owner" file holds: which boot and which
// process start made it, so that a pid reused after the node died (or after
// a reboot, /tmp being on disk) is told from the node itself.
std::string owner_record(pid_t pid) { return boot_id() + " " + std::to_string(start_ticks(pid)) + "\n"; }

// Whether the node that made staging directory `dir_fd` (named for `pid`)
// may still run. With its .owner record: the same boot and the same process
// start. Without (made before records existed): alive, and started no later
// than a minute after the directory last changed (seconds of wall-clock
// drift since boot blur the comparison; a pid reused within that minute
// keeps its leftovers: the safe side).
bool maybe_alive(pid_t pid, int dir_fd, const struct timespec& mtime) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  int fd = ::openat(dir_fd, ".owner", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    char buf[128] = {};
    ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n > 0) return std::string_view(buf, static_cast<std::size_t>(n)) == owner_record(pid);
  }
  long long ticks = start_ticks(pid);
  double boot = -1;
  if (std::FILE* st = std::fopen("/proc/stat", "re")) {
    char line[256];
    while (std::fgets(line, sizeof line, st))
      if (std::strncmp(line, "btime ", 6) == 0) boot = std::strtod(line + 6, nullptr);
    std::fclose(st);
  }
  if (ticks < 0 || boot < 0) return true;  // unknown: keep it
  double start = boot + double(ticks) / double(::sysconf(_SC_CLK_TCK));
  return start <= double(mtime.tv_sec) + 60;
}

// "herd-modules-<pid>-XXXXXX" (mkdtemp's six characters): the pid, else 0.
pid_t staging_dir_pid(const char* name) {
  constexpr std::string_view prefix = "herd-modules-";
  std::string_view n(name);
  if (n.substr(0, prefix.size()) != prefix) return 0;
  n.remove_prefix(prefix.size());
  auto dash = n.find('-');
  if (dash == 0 || dash == std::string_view::npos || n.size() - dash - 1 != 6 || dash > 9) return 0;
  pid_t pid = 0;
  for (char c : n.substr(0, dash)) {
    if (c < '0' || c > '9') return 0;
    pid = pid * 10 + (c - '0');
  }
  return pid;
}

// Empties and removes directory `name` in `parent_fd`, only if it is a real
// directory (not a symlink) owned by us; never follows a link inside it.
void remove_stale(int parent_fd, const char* name) {
  int fd = ::openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  if (::fstat(fd, &st) != 0 || st.st_uid != ::geteuid()) {
    ::close(fd);
    return;
  }
  DIR* d = ::fdopendir(fd);  // owns fd
  if (!d) {
    ::close(fd);
    return;
  }
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    ::unlinkat(::dirfd(d), e->d_name, 0);  // a staged copy; a symlink itself, not its target; never a directory
  }
  ::closedir(d);
  ::unlinkat(parent_fd, name, AT_REMOVEDIR);  // fails, harmlessly, if something was left
}

}  // namespace

void remove_stale_staging_dirs(const std::string& parent) noexcept {
  int pfd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (pfd < 0) return;
  DIR* d = ::fdopendir(pfd);  // owns pfd
  if (!d) {
    ::close(pfd);
    return;
  }
  const uid_t me = ::geteuid();
  while (dirent* e = ::readdir(d)) {
    pid_t pid = staging_dir_pid(e->d_name);
    if (pid <= 0 || pid == ::getpid()) continue;
    struct stat st;
    if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISDIR(st.st_mode) || st.st_uid != me) continue;  // a symlink, a file, someone else's
    int fd = ::openat(::dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    bool alive = maybe_alive(pid, fd, st.st_mtim);
    ::close(fd);
    if (!alive) remove_stale(::dirfd(d), e->d_name);
  }
  ::closedir(d);
}

std::string staging_dir(std::string& error) {
  std::lock_guard<std::mutex> g(g_dir_m);
  if (!g_dir.empty()) return g_dir;
  const char* tmp = std::getenv("TMPDIR");
  const std::string parent = tmp && *tmp ? tmp : "/tmp";
  // A node that died (SIGKILL, a crash) left its copies behind.
  remove_stale_staging_dirs(parent);
  std::string tmpl = parent + "/herd-modules-" + std::to_string(::getpid()) + "-XXXXXX";
  if (!::mkdtemp(tmpl.data())) {  // mode 0700
    error = "cannot make a staging directory " + tmpl + ": " + std::strerror(errno);
    return {};
  }
  g_dir = tmpl;
  // Who made it, for a later node's remove_stale_staging_dirs.
  std::string owner = owner_record(::getpid());
  int ofd = ::open((g_dir + "/.owner").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400);
  if (ofd >= 0) {
    if (::write(ofd, owner.data(), owner.size()) != static_cast<ssize_t>(owner.size())) ::unlink((g_dir + "/.owner").c_str());
    ::close(ofd);
  }
  // At exit: what is still loaded stays mapped; its file name goes.
  std::atexit([] { remove_staging_dir(); });
  return g_dir;
}

std::string write_staged(const std::string& dir, const std::string& name, std::string_view bytes) {
  std::string final_path = dir + "/" + name;
  std::string tmp = final_path + ".tmp";
  ::unlink(tmp.c_str());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0500);
  if (fd < 0) return tmp + ": " + std::strerror(errno);
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string e = tmp + ": write: " + std::strerror(n < 0 ? errno : EIO);
      ::close(fd);
      ::unlink(tmp.c_str());
      return e;
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    std::string e = final_path + ": rename: " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return e;
  }
  return {};
}

void remove_staging_dir() noexcept {
  std::lock_guard<std::mutex> g(g_dir_m);
  if (g_dir.empty()) return;
  if (DIR* d = ::opendir(g_dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      ::unlinkat(::dirfd(d), e->d_name, 0);
    }
    ::closedir(d);
  }
  ::rmdir(g_dir.c_str());
  g_dir.clear();
}

}  // namespace herd::detail::staging
