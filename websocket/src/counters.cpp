#include <herd/websocket/serve.hpp>

#include <atomic>

namespace herd::ws {
namespace {
// Statistics only: relaxed, nothing is ordered by them.
std::atomic<uint64_t> opened{0}, slow{0}, timeouts{0};
}  // namespace

counters_view counters() noexcept {
  return {opened.load(std::memory_order_relaxed), slow.load(std::memory_order_relaxed),
          timeouts.load(std::memory_order_relaxed)};
}

namespace detail {
void count_opened() noexcept { opened.fetch_add(1, std::memory_order_relaxed); }
void count_slow_consumer() noexcept { slow.fetch_add(1, std::memory_order_relaxed); }
void count_timeout() noexcept { timeouts.fetch_add(1, std::memory_order_relaxed); }
}  // namespace detail

std::string error::message() const {
  std::string m = code == errc::refused ? "refused" : "io";
  if (status) {
    m += ' ';
    m += std::to_string(status);
  }
  if (!detail.empty()) {
    m += ": ";
    m += detail;
  }
  return m;
}

// The connection loop for the one transport there is today.
template herd::result<herd::ok, error> serve<net::tcp_socket>(net::tcp_socket, const http::request&, std::string_view,
                                                              std::unique_ptr<handler>, options);
template herd::result<herd::ok, error> serve<net::tcp_socket>(net::tcp_socket, const http::request&, std::string_view,
                                                              std::unique_ptr<handler>, std::shared_ptr<const options>);

}  // namespace herd::ws
