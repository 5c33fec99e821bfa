#include <herd/http/stream.hpp>

#include "head.hpp"

namespace herd::http {

void response_stream::reply(int status, std::vector<header> headers, std::optional<std::size_t> content_length) {
  if (started_) throw std::logic_error("herd::http: response_stream::reply called twice");
  started_ = true;
  status_ = detail::checked_status(status);
  if (detail::bodiless(status_)) {
    framing_ = framing::none;
  } else if (content_length) {
    framing_ = framing::length;
    length_ = *content_length;
  } else if (o_.version_minor >= 1) {
    framing_ = framing::chunked;
  } else {
    framing_ = framing::close;  // HTTP/1.0 cannot read chunks: the end is the close
    if (!o_.head) o_.keep_alive = false;
  }
  scratch_.clear();
  detail::write_head(scratch_, status_, headers, o_);
  if (framing_ == framing::length) {
    scratch_ += "Content-Length: ";
    detail::append_number(scratch_, length_);
    scratch_ += "\r\n";
  } else if (framing_ == framing::chunked) {
    scratch_ += "Transfer-Encoding: chunked\r\n";
  }
  scratch_ += "\r\n";
  // HEAD and bodiless answers are complete with the head.
  if (framing_ == framing::none || o_.head) finished_ = true;
  send(scratch_);
  std::string().swap(scratch_);
}

void response_stream::body(std::string_view data, bool fin) {
  if (!started_) throw std::logic_error("herd::http: response_stream::body before reply");
  if (closed_) send(data);  // throws stream_closed again
  if (framing_ == framing::none && !data.empty())
    throw std::logic_error("herd::http: a " + std::to_string(status_) + " response has no body");
  if (finished_ && !o_.head && framing_ != framing::none)
    throw std::logic_error("herd::http: response_stream::body after the body ended");
  if (framing_ == framing::length && (data.size() > length_ - written_ || (fin && written_ + data.size() != length_)))
    throw std::logic_error("herd::http: streamed body of " + std::to_string(written_ + data.size()) +
                           (fin ? " bytes at fin" : "+ bytes") + ", Content-Length " + std::to_string(length_));
  written_ += data.size();
  if (finished_) return;  // HEAD: the GET handler's body is not sent
  switch (framing_) {
    case framing::none:
      break;
    case framing::length:
    case framing::close:
      send(data);
      break;
    case framing::chunked:
      scratch_.clear();
      if (!data.empty()) {  // an empty chunk would end the body
        detail::append_number(scratch_, data.size(), 16);
        scratch_ += "\r\n";
        scratch_ += data;
        scratch_ += "\r\n";
      }
      if (fin) scratch_ += "0\r\n\r\n";
      send(scratch_);
      if (scratch_.capacity() > 16384) std::string().swap(scratch_);
      break;
  }
  if (fin) finished_ = true;
}

bool response_stream::finish() {
  if (!started_) throw std::logic_error("herd::http: response_stream::finish before reply");
  if (!finished_) {
    switch (framing_) {
      case framing::chunked:
        body({}, true);
        break;
      case framing::length:
        if (written_ != length_) return false;  // the client waits for bytes that will not come
        finished_ = true;
        break;
      case framing::close:
      case framing::none:
        finished_ = true;
        break;
    }
  }
  return o_.keep_alive && (framing_ != framing::close || o_.head);
}

}  // namespace herd::http
