// The reader feeds Boost.Beast's basic_parser from its own buffer. A
// parser per request (Beast's cannot be reset), built in place: no
// allocation beyond the request's strings. Beast calls back with views into
// the buffer; they are copied into the request (request.hpp: owned strings).
//
// Beast stops after the head when not `eager`: that is where `head` is
// reported, so the connection loop can answer 100-continue (or refuse the
// body) before the body is read. Then the parser is made eager and reads on.
//
// Checks added to Beast's (RFC 9112): a request with both Content-Length and
// Transfer-Encoding, or a Transfer-Encoding whose last coding is not
// chunked, is malformed (the request smuggling cases: 6.1, 6.3); a version
// other than HTTP/1.x is refused with 505. Trailer fields are parsed and
// dropped: nothing in the request distinguishes them from header fields, and
// a header a handler trusts must not arrive after the body.
#include <herd/http/reader.hpp>

#include <boost/beast/core/error.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>

#include <optional>

namespace herd::http {
namespace {

namespace bh = boost::beast::http;
using boost::beast::error_code;
using sv = boost::beast::string_view;

std::string_view std_view(sv s) { return {s.data(), s.size()}; }

class parser final : public bh::basic_parser<true> {
 public:
  parser(request& into, const limits& l) : q_(into) {
    header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(l.max_head, UINT32_MAX)));
    body_limit(static_cast<std::uint64_t>(l.max_body));
    eager(false);
  }

 private:
  void on_request_impl(bh::verb, sv method, sv target, int version, error_code&) override {
    q_.method.assign(method.data(), method.size());
    q_.target.assign(target.data(), target.size());
    auto t = std_view(target);
    auto mark = t.find('?');
    q_.path = std::string(t.substr(0, mark));
    q_.query = mark == std::string_view::npos ? std::string() : std::string(t.substr(mark + 1));
    q_.version_minor = version % 10;
  }
  void on_response_impl(int, sv, int, error_code& ec) override { ec = bh::error::bad_method; }
  void on_field_impl(bh::field, sv name, sv value, error_code&) override {
    if (is_header_done()) return;  // a trailer field: dropped (see the top)
    q_.headers.push_back({std::string(std_view(name)), std::string(std_view(value))});
  }
  void on_header_impl(error_code& ec) override {
    bool cl = false, te = false;
    for (const auto& h : q_.headers) {
      cl = cl || iequals(h.name, "Content-Length");
      te = te || iequals(h.name, "Transfer-Encoding");
    }
    if ((cl && te) || (te && !chunked())) {
      ec = bh::error::bad_transfer_encoding;
    }
  }
  void on_body_init_impl(boost::optional<std::uint64_t> const& length, error_code&) override {
    if (length) q_.body.reserve(static_cast<std::size_t>(*length));
  }
  std::size_t on_body_impl(sv body, error_code&) override {
    q_.body.append(body.data(), body.size());
    return body.size();
  }
  void on_chunk_header_impl(std::uint64_t, sv, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, sv body, error_code&) override {
    q_.body.append(body.data(), body.size());
    return body.size();
  }
  void on_finish_impl(error_code&) override {}

  request& q_;
};

// Beast refuses any version but 1.0 and 1.1 as bad_version, as it does a
// request line that is not HTTP at all, or "HTTP/1.1" followed by junk: a
// well-formed "HTTP/d.d" other than 1.0 and 1.1 where the request line's
// version stands is a version this server does not speak (505).
bool other_version(std::string_view rest) {
  // method SP target SP version: the 8 bytes Beast judged
  auto sp1 = rest.find(' ');
  auto sp2 = sp1 == std::string_view::npos ? sp1 : rest.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || rest.size() < sp2 + 9) return false;
  std::string_view v = rest.substr(sp2 + 1, 8);
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  bool well_formed = v.substr(0, 5) == "HTTP/" && digit(v[5]) && v[6] == '.' && digit(v[7]);
  return well_formed && v.substr(5) != "1.0" && v.substr(5) != "1.1";  // 1.0/1.1 refused: what follows is bad
}

}  // namespace

struct request_reader::impl {
  limits lim;
  std::string buf;       // fed, not yet parsed: buf[pos..]
  std::size_t pos = 0;
  std::size_t used = 0;   // bytes the current request's parser has taken (its head, at `head`)
  request cur;
  std::optional<parser> p;
  bool head_seen = false;  // `head` was reported for cur
  bool done = false;       // `request` was reported; take() is next
  int failed = 0;          // the error status, once one happened
};

request_reader::request_reader(limits l) : lim_(l) {}
request_reader::request_reader(request_reader&&) noexcept = default;
request_reader& request_reader::operator=(request_reader&&) noexcept = default;
request_reader::~request_reader() = default;

void request_reader::feed(std::string_view bytes) {
  if (!p_) {
    p_ = std::make_unique<impl>();
    p_->lim = lim_;
  }
  if (p_->failed) return;
  if (p_->pos > 0 && p_->pos == p_->buf.size()) {
    p_->buf.clear();
    p_->pos = 0;
  }
  p_->buf.append(bytes);
}

request_reader::event request_reader::next() {
  if (!p_) return event::need_more;
  impl& s = *p_;
  if (s.failed) return event::error;
  if (s.done) return event::request;
  for (;;) {
    if (!s.p) {
      if (s.pos == s.buf.size()) return event::need_more;
      s.cur = request{};
      s.p.emplace(s.cur, s.lim);
      s.head_seen = false;
      s.used = 0;
    }
    // Beast 1.74 asserts (and without assertions reads outside the
    // buffer) when it re-parses a last chunk from fewer than 5 bytes
    // (basic_parser.ipp, parse_chunk_header: n >= 5) — as when next() is
    // called again after need_more with "0\r\n" buffered (found by
    // http_parser_fuzz). A last-chunk line starts with '0' after the CRLF
    // that may end the previous chunk's data; with one of under 5 bytes in
    // hand, wait for more: what is left of a request is then at least
    // "0\r\n\r\n", so this never stalls one. Anything else (a malformed
    // size) goes to Beast at once, to be refused.
    if (s.p->is_header_done() && s.p->chunked() && s.buf.size() - s.pos < 5) {
      std::string_view left = std::string_view(s.buf).substr(s.pos);
      std::size_t first = left.find_first_not_of("\r\n");
      if (first == std::string_view::npos || left[first] == '0') return event::need_more;
    }
    error_code ec;
    std::size_t used = s.p->put(boost::asio::const_buffer(s.buf.data() + s.pos, s.buf.size() - s.pos), ec);
    s.pos += used;
    s.used += used;
    if (ec == bh::error::need_more) {
      // Beast wants the head whole: past the limit it would never fit.
      if (!s.p->is_header_done() && s.buf.size() - s.pos > s.lim.max_head) {
        s.failed = 431;
        return event::error;
      }
      if (s.pos == s.buf.size()) {
        s.buf.clear();
        s.pos = 0;
      }
      if (used == 0 || s.pos == s.buf.size()) return event::need_more;
      continue;
    }
    if (ec) {
      if (ec == bh::error::header_limit)
        s.failed = 431;
      else if (ec == bh::error::body_limit)
        s.failed = 413;
      else if (ec == bh::error::bad_version && other_version(std::string_view(s.buf).substr(s.pos)))
        s.failed = 505;
      else
        s.failed = 400;
      return event::error;
    }
    if (s.p->is_header_done() && !s.head_seen) {
      // Beast's header_limit is approximate (it depends on where the reads
      // were cut); the limit is applied here exactly, to the head's bytes.
      if (s.used > s.lim.max_head) {
        s.failed = 431;
        return event::error;
      }
      s.head_seen = true;
      s.p->eager(true);
      s.done = s.p->is_done();  // no body: `request` comes next
      return event::head;
    }
    if (s.p->is_done()) {
      s.done = true;
      return event::request;
    }
    if (s.pos == s.buf.size()) return event::need_more;
  }
}

const request& request_reader::current() const {
  static const request empty;
  return p_ ? p_->cur : empty;
}

request request_reader::take() {
  impl& s = *p_;
  s.done = false;
  s.p.reset();
  request out = std::move(s.cur);
  s.cur = request{};
  if (s.pos == s.buf.size()) {
    s.buf.clear();
    s.pos = 0;
  } else if (s.pos > 4096 && s.pos > s.buf.size() / 2) {
    s.buf.erase(0, s.pos);  // pipelined bytes move to the front now and then, not per request
    s.pos = 0;
  }
  return out;
}

int request_reader::error_status() const { return p_ ? p_->failed : 0; }

bool request_reader::body_expected() const { return p_ && p_->p && p_->p->is_header_done() && !p_->p->is_done(); }

bool request_reader::head_in_progress() const {
  if (!p_ || p_->failed) return false;
  if (p_->p) return !p_->p->is_header_done();
  return p_->pos < p_->buf.size();
}

bool request_reader::idle() const { return !p_ || (!p_->p && !p_->done && p_->pos == p_->buf.size()); }

std::string request_reader::take_rest() {
  if (!p_) return {};
  std::string rest = p_->buf.substr(p_->pos);
  p_->buf.clear();
  p_->pos = 0;
  return rest;
}

void request_reader::shrink() {
  if (!p_ || !idle() || p_->failed) return;
  p_.reset();  // re-made by the next feed
}

bool keep_alive(const request& r) {
  std::string c = r.joined("Connection");
  bool close = false, keep = false;
  std::string_view v = c;
  while (!v.empty()) {
    auto comma = v.find(',');
    std::string_view tok = v.substr(0, comma);
    while (!tok.empty() && (tok.front() == ' ' || tok.front() == '\t')) tok.remove_prefix(1);
    while (!tok.empty() && (tok.back() == ' ' || tok.back() == '\t')) tok.remove_suffix(1);
    close = close || iequals(tok, "close");
    keep = keep || iequals(tok, "keep-alive");
    if (comma == std::string_view::npos) break;
    v.remove_prefix(comma + 1);
  }
  if (close) return false;
  return r.version_minor >= 1 || keep;
}

bool expects_continue(const request& r) {
  auto e = r.find("Expect");
  return e && iequals(*e, "100-continue");
}

}  // namespace herd::http
