#include "startup_checks.hpp"

#include <cerrno>
#include <cstdio>
#include <system_error>

namespace herd::rt {

std::optional<uint64_t> read_proc_number(const char* path) {
  FILE* f = std::fopen(path, "r");
  if (!f) return std::nullopt;
  unsigned long long value = 0;
  const bool ok = std::fscanf(f, "%llu", &value) == 1;
  std::fclose(f);
  if (!ok) return std::nullopt;
  return uint64_t(value);
}

limits_source limits_source::system() {
  limits_source s;
  s.max_map_count = [] { return read_proc_number("/proc/sys/vm/max_map_count"); };
  s.nr_open = [] { return read_proc_number("/proc/sys/fs/nr_open"); };
  s.get_nofile = [](rlimit* r) { return getrlimit(RLIMIT_NOFILE, r) == 0; };
  s.set_nofile = [](const rlimit& r) { return setrlimit(RLIMIT_NOFILE, &r) == 0; };
  return s;
}

namespace {

void check_map_count(size_t max_actors, guard_kind guard, const limits_source& source, limits_report& report) {
  // madv_guard puts guard markers in the page tables: a stack costs no mapping beyond its
  // chunk's, so vm.max_map_count does not bound the number of actors. Nothing to check.
  if (guard == guard_kind::madv_guard) return;
  // mprotect splits a chunk into [guard][stack] mappings: two per stack, plus ~1000 for the
  // libraries, heap, thread stacks and the runtime's other mappings.
  const uint64_t needed = 2 * uint64_t(max_actors) + 1000;
  const std::string fix = "sysctl -w vm.max_map_count=" + std::to_string(needed);
  const std::optional<uint64_t> current = source.max_map_count();
  if (!current) {
    report.warnings.push_back("herd: cannot read /proc/sys/vm/max_map_count; with mprotect stack guards " +
                              std::to_string(max_actors) + " actors need " + std::to_string(needed) +
                              " mappings. If spawns fail with ENOMEM: " + fix);
    return;
  }
  if (*current >= needed) return;
  const uint64_t fits = *current > 1000 ? (*current - 1000) / 2 : 0;
  std::string msg = "herd: vm.max_map_count is " + std::to_string(*current) + ", but " +
                    std::to_string(max_actors) + " actors with mprotect stack guards need 2 x " +
                    std::to_string(max_actors) + " + 1000 = " + std::to_string(needed) + " mappings";
  if (fits == 0) {
    report.errors.push_back(msg + "; not one actor can get a guarded stack. Run: " + fix);
  } else {
    report.warnings.push_back(msg + "; spawns beyond ~" + std::to_string(fits) +
                              " live actors will fail. Run: " + fix + " (persist it in /etc/sysctl.d/)");
  }
}

std::string nofile_remedy(size_t wanted_fds) {
  const std::string n = std::to_string(wanted_fds);
  return "Raise it: ulimit -n " + n + " in the shell that starts the node (the hard limit needs root), sysctl -w fs.nr_open=" +
         n + " if that is above fs.nr_open, nofile in /etc/security/limits.conf or LimitNOFILE=" + n +
         " in the systemd unit. Load generators opening many outgoing connections also need a wider "
         "net.ipv4.ip_local_port_range (about 28,000 ports per destination by default).";
}

void check_nofile(size_t wanted_fds, const limits_source& source, limits_report& report) {
  rlimit lim{};
  if (!source.get_nofile(&lim)) {
    report.warnings.push_back("herd: cannot read RLIMIT_NOFILE");
    return;
  }
  // The soft limit's 1024 exists for select(), whose fd_set cannot hold more; herd polls with
  // epoll, so it takes the whole hard limit, as Go's runtime does.
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit raised = lim;
    if (lim.rlim_max == RLIM_INFINITY) {
      // The kernel refuses an infinite soft limit for files; fs.nr_open is the real ceiling.
      raised.rlim_cur = source.nr_open().value_or(1u << 20);
    } else {
      raised.rlim_cur = lim.rlim_max;
    }
    if (raised.rlim_cur > lim.rlim_cur) {
      if (source.set_nofile(raised)) {
        lim = raised;
      } else {
        report.warnings.push_back("herd: could not raise the open-file soft limit from " + std::to_string(lim.rlim_cur) +
                                  " to " + std::to_string(raised.rlim_cur) + ": " +
                                  std::error_code(errno, std::generic_category()).message());
      }
    }
  }
  if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max < wanted_fds) {
    report.warnings.push_back("herd: the open-file hard limit is " + std::to_string(lim.rlim_max) + ", below the " +
                              std::to_string(wanted_fds) + " file descriptors wanted; accepts beyond it fail with EMFILE. " +
                              nofile_remedy(wanted_fds));
  } else if (lim.rlim_cur < wanted_fds) {
    report.warnings.push_back("herd: the open-file soft limit is " + std::to_string(lim.rlim_cur) + ", below the " +
                              std::to_string(wanted_fds) + " file descriptors wanted. " + nofile_remedy(wanted_fds));
  }
}

}  // namespace

limits_report check_limits(size_t max_actors, guard_kind guard, size_t wanted_fds, const limits_source& source) {
  limits_report report;
  if (max_actors == 0) report.errors.push_back("herd: max_actors is 0; no actor could be spawned");
  check_map_count(max_actors, guard, source, report);
  check_nofile(wanted_fds, source, report);
  return report;
}

limits_report check_limits(size_t max_actors, guard_kind guard, size_t wanted_fds) {
  return check_limits(max_actors, guard, wanted_fds, limits_source::system());
}

}  // namespace herd::rt
