// herd::observer::start and the handle (see observer.hpp; the design is at
// the top of observer_server.cpp).
#include <herd/observer/observer.hpp>

#include <herd/actors/node.hpp>
#include <herd/runtime/sched.hpp>

#include "metrics_http.hpp"
#include "observer_server.hpp"
#include "unix_socket.hpp"

#include <unistd.h>

#include <exception>

namespace herd::observer {

handle::handle(std::unique_ptr<server> s) : s_(std::move(s)) {}
handle::~handle() = default;
const std::string& handle::path() const noexcept { return s_->path(); }
uint16_t handle::metrics_port() const noexcept { return s_->metrics_port(); }

start_result start(const options& o) {
  start_result r;
  if (rt::on_worker()) {
    r.error = "herd::observer::start must not be called from a worker (use a plain thread)";
    return r;
  }
  if (current_node_stats().max_actors == 0) {
    r.error = "herd::observer::start needs a running node";
    return r;
  }
  if (o.idle_timeout.count() <= 0 || !(o.requests_per_s > 0) || !(o.request_burst >= 1) ||
      !(o.max_cpu_share > 0 && o.max_cpu_share <= 1)) {
    r.error = "herd::observer: idle_timeout and requests_per_s must be positive, request_burst at least 1 and "
              "max_cpu_share in (0, 1]";
    return r;
  }
  int mfd = -1;
  uint16_t mport = 0;
  if (!o.metrics_addr.empty()) {
    mfd = open_metrics_listener(o.metrics_addr, &mport, &r.error);
    if (mfd < 0) return r;
  }
  int ufd = open_unix_listener(o.path, &r.error);
  if (ufd < 0) {
    if (mfd >= 0) ::close(mfd);
    return r;
  }
  try {
    auto s = std::make_unique<server>(ufd, o.path, mfd, mport, o);
    s->start();
    r.observer = std::make_unique<handle>(std::move(s));
  } catch (const std::exception& e) {
    r.error = std::string("herd::observer: ") + e.what();
  }
  return r;
}

}  // namespace herd::observer
