// One observer connection's buffers: line framing in (with the 64 KiB cut
// and the discard-to-newline that follows it) and the reply queue out (with
// the 4 MiB cap past which the client is dropped, never waited for).
#pragma once
#include "protocol.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace herd::observer {

inline constexpr std::size_t max_queued_reply = 4u << 20;

struct client {
  uint64_t key = 0;  // unique for the server's life (fds are reused)
  int fd = -1;
  std::string in;
  bool discarding = false;  // after a too-long line: dropping up to its '\n'
  std::string out;
  std::size_t out_off = 0;
  bool dead = false;  // to be closed: peer gone, error, or too much queued

  // Splits `data` into lines and calls on_line for each complete one (or
  // on_too_long for one past max_line, once per such line).
  void feed(std::string_view data, const std::function<void(std::string_view)>& on_line,
            const std::function<void()>& on_too_long);
  // Queues a reply; marks the client dead once more than max_queued_reply
  // bytes wait for it.
  void queue(std::string_view line);
  // Writes what it can without blocking; marks it dead on a write error.
  void flush();
  bool wants_write() const noexcept { return out_off < out.size(); }
};

}  // namespace herd::observer
