// Sending to another node from a local process or thread (send_queue.cpp).
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "state.hpp"

namespace herd::dist::detail {

// Where a frame for a node goes: its connection process (started from a
// process when there is none) and that process's queue.
struct route {
  herd::pid conn;
  std::shared_ptr<conn_counters> q;
  bool sender = false;  // the peer takes SEND_SENDER
  self_id me;
  std::size_t limit = 0;
};

std::optional<route> route_to(std::string_view node);
// Parks the calling process while `limit` bytes or more are queued on `q`
// (not a thread, the connection itself or an unwinding one). True when the
// connection ended meanwhile.
bool wait_for_room(conn_counters& q, std::size_t limit, herd::pid conn) noexcept;
// Queues a whole frame, counted in the queue's bytes.
void enqueue(const route& r, std::string frame);
// route_to, then wait for room (once more if that connection ended).
std::optional<route> route_with_room(std::string_view node);
// payload to a remote pid.
bool send_remote(herd::pid to, std::string bytes);

}  // namespace herd::dist::detail
