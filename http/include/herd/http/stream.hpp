// herd::http::response_stream — a response whose body a handler writes in
// pieces (cowboy_req:stream_reply / stream_body):
//
//   r.stream("GET", "/events", [](herd::http::request&, const herd::http::bindings&,
//                                 herd::http::response_stream& out) {
//     out.reply(200, {{"Content-Type", "text/plain"}});  // head goes out now
//     for (auto& piece : pieces) out.body(piece);          // each one sent as it comes
//     out.body("", true);                                  // fin (or just return)
//   });
//
// Framing: with a `content_length` the body goes out as plain writes (and
// must be exactly that long); without one, chunked for HTTP/1.1 and, for an
// HTTP/1.0 peer, raw bytes ended by closing the connection. HEAD, 1xx, 204
// and 304 get the head only: body bytes for a HEAD are dropped (the handler
// is the GET one), body bytes for a 204/304 are the handler's bug
// (std::logic_error).
//
// Back-pressure: body() is the transport's send — it parks the connection's
// process while the socket's send buffer is full, as net's send does; the
// handler runs in the connection's process, one request at a time, so
// pipelined requests behind it wait for it, then are answered in order.
//
// A peer that goes away mid-stream: body() (or reply()) throws
// stream_closed; the handler's frames unwind, and the server closes the
// connection without writing more. Any other exception once the head is out
// also closes the connection (a chunked body then lacks its last chunk, so
// the client sees it cut short); before the head, it is a 500 as for any
// handler. A handler that returns without reply() gets a 500; one that
// returns before fin gets its body finished (last chunk) — or, with a
// content_length not yet reached, the connection closed.
#pragma once
#include <herd/http/request.hpp>
#include <herd/http/response.hpp>

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace herd::http {

// The peer closed or reset the connection while a streamed response was
// being written; what() says which send failed.
class stream_closed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class response_stream {
 public:
  // Writes `bytes` to the connection (parking while the socket is full);
  // false when the peer is gone.
  using send_fn = bool (*)(void* ctx, std::string_view bytes);

  // The server makes one per streamed request; `o` is how the request wants
  // its answer framed (version, keep-alive, HEAD).
  response_stream(send_fn send, void* ctx, const write_options& o) noexcept
      : send_(send), ctx_(ctx), o_(o) {}
  response_stream(const response_stream&) = delete;
  response_stream& operator=(const response_stream&) = delete;

  // Once, from the connection's process: sends the status line and headers
  // now (the handler's own Content-Length / Transfer-Encoding / Connection
  // headers are dropped, as for response). std::logic_error when called
  // twice; stream_closed when the peer is gone.
  void reply(int status, std::vector<header> headers = {},
             std::optional<std::size_t> content_length = std::nullopt);
  // After reply: sends `data` as the next piece of the body (an empty piece
  // sends nothing); `fin` ends the body. std::logic_error before reply,
  // after fin, past the content_length or short of it at fin, and for body
  // bytes to a 204/304; stream_closed when the peer is gone.
  void body(std::string_view data, bool fin = false);

  bool started() const noexcept { return started_; }
  bool finished() const noexcept { return finished_; }

  // The server, after the handler returned (reply was called): ends the
  // body if the handler did not; true when the connection can carry the
  // next request. stream_closed when the peer is gone.
  bool finish();

 private:
  enum class framing { none, length, chunked, close };
  // Once a send failed, every later one throws again.
  void send(std::string_view bytes) {
    if (!closed_ && bytes.empty()) return;
    if (closed_ || !send_(ctx_, bytes)) {
      closed_ = finished_ = true;  // nothing more can go out on this connection
      throw stream_closed("herd::http: the peer closed the connection during a streamed response");
    }
  }

  send_fn send_;
  void* ctx_;
  write_options o_;
  framing framing_ = framing::none;
  bool started_ = false;
  bool finished_ = false;
  bool closed_ = false;  // a send failed: every later one throws stream_closed
  int status_ = 0;
  std::size_t length_ = 0;   // framing::length: what was promised
  std::size_t written_ = 0;  // body bytes given so far
  std::string scratch_;      // one chunk's framing and data, sent together
};

}  // namespace herd::http
