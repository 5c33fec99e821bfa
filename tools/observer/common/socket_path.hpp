// Whether a Unix socket path can be trusted: shared by the node (which
// binds there) and herd-observer (which connects there), and free of any
// herd library so the CLI can keep linking none.
//
// A path is only as safe as its least safe component. Checking just the
// socket's directory (following symlinks) lets another user plant a symlink
// in a shared directory such as /tmp, aim it at our own directory until we
// have checked it, then aim it at a socket of theirs. So, as OpenSSH's
// safe_path and systemd's CHASE_SAFE do, every component is resolved by hand
// from the root:
//   - a directory must belong to root or to `uid`, and if group or others
//     may write to it, it must be sticky (so they cannot rename or replace
//     our entries in it, as in /tmp);
//   - a symlink must belong to root or to `uid` (nobody else can retarget
//     it; in a sticky directory nobody else can replace it either).
#pragma once
#include <string>
#include <sys/types.h>

namespace herd::observer_path {

struct resolved_socket_path {
  std::string error;      // empty when the path is safe
  std::string directory;  // the socket's directory, symlinks resolved
  bool exists = false;    // something is at the path's last component
  int sys_errno = 0;      // set when `error` is a failed lookup (ENOENT...), not a refusal
};

// Checks every directory and symlink leading to `path` (a relative path is
// taken from the working directory). The last component is not required to
// exist, but when it is a symlink it must be safe too and is followed.
resolved_socket_path check_socket_path(const std::string& path, uid_t uid);

}  // namespace herd::observer_path
