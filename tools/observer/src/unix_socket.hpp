// The observer's Unix domain socket: opening it safely and checking peers.
#pragma once
#include <string>
#include <sys/types.h>

namespace herd::observer {

// Binds and listens at `path` (non-blocking, close-on-exec, mode 0600).
// Refuses, with the reason in *error, a path through a directory or symlink
// another user could change (socket_path.hpp), a directory that is not this user's or
// that group or others can enter (the mode 0600 of the socket alone would
// leave a window between bind and chmod, and a path others can reach), a
// path that exists and is not a socket, or one a live node listens on. A
// stale socket file left by a node that died is replaced. Returns the fd or -1.
int open_unix_listener(const std::string& path, std::string* error);

// The peer's uid (SO_PEERCRED), or -1.
long peer_uid(int fd);

// A peer may talk to the node when it runs as the node's user or as root.
bool peer_allowed(long uid);

}  // namespace herd::observer
