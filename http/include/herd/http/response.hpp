// herd::http::response — what a route answers, and the bytes it becomes.
//
// The writer owns the framing headers: a response's own Content-Length,
// Transfer-Encoding and Connection headers are dropped and written from the
// response and the connection's state, so a handler cannot frame a body
// wrongly or keep open a connection the server is closing.
#pragma once
#include <herd/http/request.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace herd::http {

struct response {
  int status = 200;
  std::vector<header> headers;
  std::string body;
  // Send the body with the chunked transfer coding (HTTP/1.1 peers; an
  // HTTP/1.0 peer gets Content-Length instead, as it cannot read chunks).
  bool chunked = false;

  // Any thread. A response with `body` and a Content-Type header.
  static response text(int status, std::string body,
                       std::string content_type = "text/plain; charset=utf-8");
  // Any thread. Appends a header (repeats allowed) and returns *this.
  response& set(std::string name, std::string value);
};

// The standard reason phrase of `status` ("Not Found"), "Unknown" when none.
std::string_view reason_phrase(int status) noexcept;

// How one response is framed on the wire.
struct write_options {
  int version_minor = 1;   // the request's HTTP/1.<minor>
  bool keep_alive = true;  // false: "Connection: close" (the server closes after it)
  bool head = false;       // answer to HEAD: headers as for GET, no body bytes
};

// Appends the bytes of `r` to `out` (status line, headers, framing, body).
void write_response(std::string& out, const response& r, const write_options& o);
// Appends the interim "HTTP/1.1 100 Continue" for Expect: 100-continue.
void write_continue(std::string& out);

}  // namespace herd::http
