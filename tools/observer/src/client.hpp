// One observer connection's buffers: line framing in (with the 64 KiB cut
// and the discard-to-newline that follows it) and the reply queue out (with
// the 4 MiB cap past which the client is dropped, never waited for), plus
// what the server's scheduler keeps per client (pacing.hpp).
//
// Input is read into `in` and taken out one line at a time, so the server
// decides when a client's next request is answered (its rate limit, its
// fair share, a deferred `load` reply before it); the server reads more only
// once `in` holds no complete line, so `in` stays under max_line + one read.
#pragma once
#include "pacing.hpp"
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
  std::size_t in_off = 0;   // `in` before this was taken already
  bool discarding = false;  // after a too-long line: dropping up to its '\n'
  bool eof = false;         // the peer shut its side: answer what is in `in`, then close
  std::string out;
  std::size_t out_off = 0;
  bool dead = false;  // to be closed: peer gone, error, too much queued, idle

  // The server's (observer_server.cpp): when it last sent a request or took reply
  // bytes (steady ms), whether a reply is being made elsewhere (a `load`:
  // its later requests wait for it), its request budget and fair-share clock.
  uint64_t active_ms = 0;
  bool awaiting = false;
  token_bucket requests;
  uint64_t vtime = 0;

  // Appends bytes read from the peer.
  void take_in(std::string_view data);
  enum class next_kind { none, line, too_long };
  // The next complete line (without '\n'; valid until the next take_in), or
  // too_long once per line longer than max_line (the rest of it is dropped).
  next_kind next(std::string_view& line);
  // A complete line (or a too-long one) waits in `in`.
  bool has_line() const noexcept;
  // Splits `data` into lines and calls on_line for each complete one (or
  // on_too_long for one past max_line, once per such line): take_in + next.
  void feed(std::string_view data, const std::function<void(std::string_view)>& on_line,
            const std::function<void()>& on_too_long);
  // Queues a reply; marks the client dead when more than max_queued_reply
  // bytes already wait for it (one reply of any size is queued: `processes`
  // with a limit of 100,000 makes ~15 MB).
  void queue(std::string_view line);
  // Writes what it can without blocking; marks it dead on a write error.
  // The bytes written (0: none).
  std::size_t flush();
  bool wants_write() const noexcept { return out_off < out.size(); }
};

}  // namespace herd::observer
