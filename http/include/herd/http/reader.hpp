// herd::http::request_reader — the sans-I/O core of the HTTP/1.1 server:
// bytes in, complete requests out. No socket, no process calls: the
// connection loop (server.hpp) and the fuzz target drive it alike.
//
// Parsing is Boost.Beast's basic_parser fed from memory (no Asio I/O); see
// docs/http.md for why it and not libhttp-parser. The reader keeps the bytes
// it was fed until a request is complete (Beast needs a head contiguous), so
// several pipelined requests in one read come out one by one, and a head
// split across reads is resumed where it stopped.
//
//   request_reader r({.max_head = 8192, .max_body = 1 << 20});
//   r.feed(bytes);
//   for (;;) switch (r.next()) {
//     case request_reader::event::need_more: return;        // read again
//     case request_reader::event::head: ...;                // r.current(): 100-continue?
//     case request_reader::event::request: use(r.take()); break;
//     case request_reader::event::error: answer(r.error_status()); close();
//   }
//
// Owned by one process at a time (no internal locking); move-only.
#pragma once
#include <herd/http/request.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace herd::http {

struct limits {
  std::size_t max_head = 8192;     // request line + headers + blank line; over it: 431
  std::size_t max_body = 1 << 20;  // decoded body; over it: 413 (at once for a Content-Length)
};

class request_reader {
 public:
  enum class event {
    need_more,  // every buffered byte is used: feed more
    head,       // the next request's head is complete (once per request, before its body)
    request,    // the request is complete: take() it
    error,      // malformed or over a limit: error_status(); the reader is finished
  };

  explicit request_reader(limits l = {});
  request_reader(request_reader&&) noexcept;
  request_reader& operator=(request_reader&&) noexcept;
  ~request_reader();

  // Appends bytes after those not yet parsed. Ignored after an error.
  void feed(std::string_view bytes);
  // Parses as far as the buffered bytes go and says what happened.
  event next();
  // The request being read: method, target, headers once `head` was
  // returned; the body too once `request` was.
  const request& current() const;
  // After `request`: moves the request out; the next one starts.
  request take();
  // After `error`: 400 (malformed), 413 (body), 431 (head), 505 (not HTTP/1.x).
  int error_status() const;
  // Whether the current request's body is still to come (after `head`).
  bool body_expected() const;
  // Bytes of a request have been fed and its head is not complete yet: the
  // head timer runs.
  bool head_in_progress() const;
  // Nothing is buffered and no request is half read: the connection is idle.
  bool idle() const;
  // Moves out the bytes fed but not parsed (what follows an upgrade
  // request's head and body); the reader is empty afterwards.
  std::string take_rest();
  // Frees what an idle reader holds (its buffer's capacity), for hibernation.
  void shrink();

 private:
  struct impl;
  limits lim_;
  std::unique_ptr<impl> p_;  // null while idle and shrunk: made by the next feed
};

// Whether the connection stays open after answering `r`: HTTP/1.1 unless
// "Connection: close"; HTTP/1.0 only with "Connection: keep-alive".
bool keep_alive(const request& r);
// Whether `r` asks for "Expect: 100-continue".
bool expects_continue(const request& r);

}  // namespace herd::http
