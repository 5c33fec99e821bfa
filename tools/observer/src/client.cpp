// See client.hpp.
#include "client.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace herd::observer {

void client::take_in(std::string_view data) {
  if (in_off > 0) {  // what was taken goes before the buffer grows
    in.erase(0, in_off);
    in_off = 0;
  }
  in.append(data);
}

bool client::has_line() const noexcept {
  const std::size_t left = in.size() - in_off;
  if (left == 0) return false;
  if (std::memchr(in.data() + in_off, '\n', left)) return true;
  return !discarding && left > max_line;
}

client::next_kind client::next(std::string_view& line) {
  for (;;) {
    std::string_view rest(in.data() + in_off, in.size() - in_off);
    auto nl = rest.find('\n');
    if (discarding) {
      if (nl == std::string_view::npos) {  // still inside the long line
        in.clear();
        in_off = 0;
        return next_kind::none;
      }
      in_off += nl + 1;
      discarding = false;
      continue;
    }
    if (nl == std::string_view::npos) {
      if (rest.size() <= max_line) return next_kind::none;  // wait for the rest of it
      in.clear();
      in_off = 0;
      discarding = true;  // drop the rest of it as it comes
      return next_kind::too_long;
    }
    in_off += nl + 1;
    if (nl > max_line) return next_kind::too_long;
    line = rest.substr(0, nl);
    return next_kind::line;
  }
}

void client::feed(std::string_view data, const std::function<void(std::string_view)>& on_line,
                  const std::function<void()>& on_too_long) {
  take_in(data);
  std::string_view line;
  for (next_kind k; !dead && (k = next(line)) != next_kind::none;) {
    if (k == next_kind::line) on_line(line);
    else on_too_long();
  }
  take_in({});  // keeps only the unfinished line
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
  if (out.size() - out_off > max_queued_reply) {
    dead = true;
    return;
  }
  out.append(line);
}

std::size_t client::flush() {
  std::size_t wrote = 0;
  while (!dead && out_off < out.size()) {
    ssize_t n = ::send(fd, out.data() + out_off, out.size() - out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      out_off += std::size_t(n);
      wrote += std::size_t(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return wrote;
    dead = true;
  }
  if (out_off == out.size()) {
    if (out.capacity() > 64 * 1024) std::string().swap(out);
    else out.clear();
    out_off = 0;
  }
  return wrote;
}

}  // namespace herd::observer
