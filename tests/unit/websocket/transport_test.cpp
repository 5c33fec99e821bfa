// The connection loop is a template over herd::net::transport: here it runs
// over a test-only in-memory transport (no socket) whose input is tcp_data
// messages the test sends and whose output is a string the test reads. It
// has no try_send, so the loop's fallback writer (send) is the one used.
#include "support/ws_server.hpp"

#include "support/node_fixture.hpp"

#include <catch2/catch.hpp>

#include <mutex>

using namespace std::chrono_literals;
using herd::ws::opcode;

namespace {

// What the server wrote, read by the test from another process.
struct wire {
  std::mutex m;
  std::string out;
  bool closed = false;
  std::string take() {
    std::lock_guard<std::mutex> g(m);
    return std::exchange(out, {});
  }
};

class mem_transport {
 public:
  mem_transport(std::shared_ptr<wire> w, herd::net::socket_id id) : w_(std::move(w)), id_(id) {}
  bool valid() const { return w_ != nullptr; }
  herd::net::socket_id id() const { return id_; }
  herd::net::result<> set_active(herd::net::active) { return {}; }  // input arrives as messages anyway
  herd::net::result<herd::net::buffer> recv(std::size_t, std::chrono::milliseconds) {
    return herd::net::errc::closed;
  }
  herd::net::result<> send(std::string_view bytes, std::chrono::milliseconds) {
    std::lock_guard<std::mutex> g(w_->m);
    w_->out.append(bytes);
    return {};
  }
  herd::net::result<> shutdown_write() { return {}; }
  void close() {
    if (!w_) return;
    std::lock_guard<std::mutex> g(w_->m);
    w_->closed = true;
  }
  herd::net::result<> controlling_process(herd::pid) { return {}; }
  herd::net::result<> set_options(const herd::net::socket_options&) { return {}; }
  std::string peer() const { return "memory"; }
  std::string local() const { return "memory"; }

 private:
  std::shared_ptr<wire> w_;
  herd::net::socket_id id_;
};
static_assert(herd::net::transport<mem_transport>);

herd::http::request upgrade_request() {
  herd::http::request r;
  r.method = "GET";
  r.target = r.path = "/ws";
  r.headers = {{"Upgrade", "websocket"}, {"Connection", "Upgrade"},
               {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}, {"Sec-WebSocket-Version", "13"}};
  return r;
}

std::string client_frame(opcode op, std::string_view p) {
  std::string f;
  herd::ws::write_frame(f, op, p, true, 0x0badf00d);
  return f;
}

}  // namespace

TEST_CASE("ws the connection loop runs over an in-memory transport: handshake, bytes read with the head, echo, push, close", "[ws][transport]") {
  auto w = std::make_shared<wire>();
  std::string head, echoed, pushed, closing;
  bool closed = false;
  herd::test::run_node(herd::test::opts(2), [&] {
    herd::net::socket_id id{42};
    herd::pid conn = herd::spawn([w, id] {
      // "rest": a frame the client sent right behind its request.
      (void)herd::ws::serve(mem_transport(w, id), upgrade_request(), client_frame(opcode::text, "early"),
                            std::make_unique<ws_test::echo_handler>(herd::pid{}));
    });
    std::string got;
    auto wait_for = [&](std::size_t n) {
      herd::test::eventually([&] {
        got += w->take();
        return got.size() >= n;
      });
      std::string r = got.substr(0, std::min(n, got.size()));
      got.erase(0, r.size());
      return r;
    };
    head = wait_for(129);  // the 101 (with the RFC's accept key) is 129 bytes
    echoed = wait_for(7);
    herd::send(conn, std::string("pushed"));
    pushed = wait_for(8);
    herd::send(conn, herd::net::tcp_data{id, herd::net::buffer::copy_of(client_frame(opcode::text, "close 1000"))});
    closing = wait_for(9);
    herd::send(conn, herd::net::tcp_closed{id});
    herd::test::eventually_gone(conn);
    std::lock_guard<std::mutex> g(w->m);
    closed = w->closed;
  });
  CHECK(head.starts_with("HTTP/1.1 101 Switching Protocols\r\n"));
  CHECK(head.find("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=") != std::string::npos);
  CHECK(echoed == std::string("\x81\x05" "early"));
  CHECK(pushed == std::string("\x81\x06" "pushed"));
  CHECK(closing == std::string("\x88\x07\x03\xe8" "asked"));
  CHECK(closed);
}
