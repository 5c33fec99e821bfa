// See client.hpp.
#include "client.hpp"

#include <sys/socket.h>

#include <cerrno>

namespace herd::observer {

void client::feed(std::string_view data, const std::function<void(std::string_view)>& on_line,
                  const std::function<void()>& on_too_long) {
  while (!data.empty() && !dead) {
    auto nl = data.find('\n');
    std::string_view seg = data.substr(0, nl);
    if (discarding) {
      if (nl == std::string_view::npos) return;  // still inside the long line
      discarding = false;
    } else if (in.size() + seg.size() > max_line) {
      in.clear();
      on_too_long();
      discarding = nl == std::string_view::npos;  // drop the rest of it as it comes
    } else if (nl == std::string_view::npos) {
      in.append(seg);
    } else if (in.empty()) {
      on_line(seg);  // the common case: a whole line in one read, no copy
    } else {
      in.append(seg);
      std::string line = std::move(in);
      in.clear();
      on_line(line);
    }
    if (nl == std::string_view::npos) return;
    data.remove_prefix(nl + 1);
  }
}

void client::queue(std::string_view line) {
  if (dead) return;
  if (out_off == out.size()) {
    // A big reply (processes with a high limit) leaves a big buffer: give it
    // back rather than keep it for the client's lifetime.
    if (out.capacity() > 64 * 1024) std::string().swap(out);
    else out.clear();
    out_off = 0;
  }
  out.append(line);
  if (out.size() - out_off > max_queued_reply) dead = true;
}

void client::flush() {
  while (!dead && out_off < out.size()) {
    ssize_t n = ::send(fd, out.data() + out_off, out.size() - out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      out_off += std::size_t(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    dead = true;
  }
  if (out_off == out.size()) {
    // A big reply (processes with a high limit) leaves a big buffer: give it
    // back rather than keep it for the client's lifetime.
    if (out.capacity() > 64 * 1024) std::string().swap(out);
    else out.clear();
    out_off = 0;
  }
}

}  // namespace herd::observer
