#include <herd/http/response.hpp>

#include "head.hpp"

#include <charconv>

namespace herd::http {

response response::text(int status, std::string body, std::string content_type) {
  response r;
  r.status = status;
  r.body = std::move(body);
  r.headers.push_back({"Content-Type", std::move(content_type)});
  return r;
}

response& response::set(std::string name, std::string value) {
  headers.push_back({std::move(name), std::move(value)});
  return *this;
}

std::string_view reason_phrase(int status) noexcept {
  switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 426: return "Upgrade Required";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

namespace detail {
void append_number(std::string& out, std::size_t n, int base) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, n, base);
  (void)ec;  // 24 digits hold any size_t
  out.append(buf, end);
}

namespace {
bool framing_header(std::string_view name) {
  return iequals(name, "Content-Length") || iequals(name, "Transfer-Encoding") || iequals(name, "Connection");
}
}  // namespace

void write_head(std::string& out, int status, const std::vector<header>& headers, const write_options& o) {
  out += o.version_minor == 0 ? "HTTP/1.0 " : "HTTP/1.1 ";
  append_number(out, static_cast<std::size_t>(status));
  out += ' ';
  out += reason_phrase(status);
  out += "\r\n";
  for (const auto& h : headers) {
    if (framing_header(h.name)) continue;
    out += h.name;
    out += ": ";
    out += h.value;
    out += "\r\n";
  }
  // HTTP/1.1 is persistent by default; an HTTP/1.0 peer needs to be told.
  if (!o.keep_alive)
    out += "Connection: close\r\n";
  else if (o.version_minor == 0)
    out += "Connection: keep-alive\r\n";
}
}  // namespace detail

void write_response(std::string& out, const response& r, const write_options& o) {
  using detail::append_number;
  int status = detail::checked_status(r.status);
  detail::write_head(out, status, r.headers, o);
  if (detail::bodiless(status)) {
    out += "\r\n";
    return;
  }
  bool chunked = r.chunked && o.version_minor >= 1;
  if (chunked) {
    out += "Transfer-Encoding: chunked\r\n\r\n";
    if (o.head) return;
    if (!r.body.empty()) {
      append_number(out, r.body.size(), 16);
      out += "\r\n";
      out += r.body;
      out += "\r\n";
    }
    out += "0\r\n\r\n";
    return;
  }
  out += "Content-Length: ";
  append_number(out, r.body.size());
  out += "\r\n\r\n";
  if (!o.head) out += r.body;
}

void write_continue(std::string& out) { out += "HTTP/1.1 100 Continue\r\n\r\n"; }

}  // namespace herd::http
