// The WebSocket handler of one gateway connection (see connection.cpp).
#pragma once
#include "gateway.hpp"

#include <herd/websocket/connection.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace push_gateway {

class conn_handler final : public herd::ws::handler {
 public:
  // `st.websockets` was counted for this connection; the destructor gives it back.
  conn_handler(state& st, std::string user);
  ~conn_handler() override;
  conn_handler(const conn_handler&) = delete;
  conn_handler& operator=(const conn_handler&) = delete;

  // In the connection's process: into presence. Before the 101 is written
  // when the upgrade will be accepted (a push the client asks for once it
  // has read the 101 reaches it: pushes queued before are written after
  // the 101), else from init.
  void enter();
  void init(herd::ws::session& s, const herd::http::request& r) override;
  void handle(herd::ws::session& s, const herd::ws::event& e) override;
  void info(herd::ws::session& s, const herd::any_message& m) override;
  void closing(herd::ws::session& s) override;
  void terminate(const herd::ws::ending& how) override;

 private:
  void command(herd::ws::session& s, std::string_view line);
  void retire() noexcept;

  state& st_;
  std::string user_;
  std::vector<std::string> rooms_;  // joined, each once (pg would list a second join twice)
  herd::pid self_{};
  bool registered_ = false;  // in presence, counted in st_.connections
};

}  // namespace push_gateway
