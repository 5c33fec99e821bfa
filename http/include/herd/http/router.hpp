// herd::http::router — method + path pattern → handler, and upgrade routes
// that take the connection over (the WebSocket layer plugs in here).
//
//   herd::http::router r;
//   r.get("/healthz", [](herd::http::request&, const herd::http::bindings&) {
//     return herd::http::response::text(200, "ok");
//   });
//   r.post("/push/user/:id", [](herd::http::request& q, const herd::http::bindings& b) {
//     return push(*b.get("id"), q.body);
//   });
//   r.upgrade("/ws", [](herd::net::tcp_socket s, herd::http::request q, std::string rest) {
//     // the connection is this handler's now: answer 101 (or an error) on `s`,
//     // then speak the new protocol; `rest` is what the peer sent after the
//     // request (its first frames, if it did not wait for the 101)
//   });
//   herd::net::start_listener("api", {.port = 8080}, herd::http::serve(std::move(r)));
//
// Patterns are literal segments and `:name` segments, each binding one
// whole non-empty path segment ("/push/user/:id" matches "/push/user/7",
// not "/push/user/" or "/push/user/7/x"). The first route added that
// matches wins. A path no route matches: 404. A path some route matches,
// none for this method: 405 with "Allow" listing the methods that would
// (HEAD is answered by a GET route, without the body).
//
// Handlers run in the connection's process (herd::self() is the
// connection), one request at a time, in the order the requests came. An
// exception from a handler answers 500 and closes the connection.
//
// An upgrade route answers GET only and matches on the path alone: the
// handler checks the rest (Upgrade, Connection, Sec-WebSocket-* headers) and
// answers 101 or an error itself. It receives the transport, the request
// and the bytes the reader had already taken past the request, and the HTTP
// loop returns when it does (the connection ends when the handler returns,
// as any connection handler's). Built before the listener starts, then only
// read: a router is shared by every connection without locks.
#pragma once
#include <herd/http/request.hpp>
#include <herd/http/response.hpp>
#include <herd/http/stream.hpp>
#include <herd/net/tcp.hpp>
#include <herd/net/transport.hpp>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace herd::http {

// The `:name` segments of the matched pattern, with the path's segments.
struct bindings {
  std::vector<std::pair<std::string, std::string>> values;
  std::optional<std::string_view> get(std::string_view name) const;
};

// Matches `path` against `pattern`; on success appends the bindings to *out
// (when not null) and returns true.
bool match_pattern(std::string_view pattern, std::string_view path, bindings* out);

using handler = std::function<response(request& req, const bindings& b)>;
// A route that writes its answer in pieces (stream.hpp): calls out.reply,
// then out.body as often as it likes.
using stream_handler = std::function<void(request& req, const bindings& b, response_stream& out)>;

template <herd::net::transport T>
using upgrade_handler_for = std::function<void(T transport, request req, std::string rest)>;

template <herd::net::transport T>
class basic_router {
 public:
  using transport_type = T;
  using upgrade_handler = upgrade_handler_for<T>;

  basic_router& route(std::string method, std::string pattern, handler h) {
    routes_.push_back({std::move(method), std::move(pattern), std::move(h), {}});
    return *this;
  }
  basic_router& get(std::string pattern, handler h) { return route("GET", std::move(pattern), std::move(h)); }
  basic_router& post(std::string pattern, handler h) { return route("POST", std::move(pattern), std::move(h)); }
  basic_router& put(std::string pattern, handler h) { return route("PUT", std::move(pattern), std::move(h)); }
  basic_router& del(std::string pattern, handler h) { return route("DELETE", std::move(pattern), std::move(h)); }
  basic_router& upgrade(std::string pattern, upgrade_handler h) {
    routes_.push_back({"GET", std::move(pattern), {}, std::move(h)});
    return *this;
  }
  // A streamed answer (a GET route also answers HEAD, without the body).
  basic_router& stream(std::string method, std::string pattern, stream_handler h) {
    routes_.push_back({std::move(method), std::move(pattern), {}, {}, std::move(h)});
    return *this;
  }

  struct match {
    enum class kind { handler, upgrade, not_found, method_not_allowed, stream };
    kind what = kind::not_found;
    const handler* run = nullptr;            // kind::handler
    const stream_handler* write = nullptr;   // kind::stream
    const upgrade_handler* take = nullptr;   // kind::upgrade
    bindings bound;
    std::string allow;                       // kind::method_not_allowed: "GET, POST"
  };

  // Any thread (the router is read only once serving).
  match find(std::string_view method, std::string_view path) const {
    match m;
    std::vector<std::string_view> allowed;  // the methods of the routes whose path matched
    for (const auto& r : routes_) {
      bindings b;
      if (!match_pattern(r.pattern, path, &b)) continue;
      bool same = r.method == method || (method == "HEAD" && r.method == "GET" && !r.take);
      if (!same) {
        allowed.push_back(r.method);
        if (r.method == "GET" && !r.take) allowed.push_back("HEAD");
        continue;
      }
      m.bound = std::move(b);
      if (r.take) {
        m.what = match::kind::upgrade;
        m.take = &r.take;
      } else if (r.write) {
        m.what = match::kind::stream;
        m.write = &r.write;
      } else {
        m.what = match::kind::handler;
        m.run = &r.run;
      }
      return m;
    }
    for (std::size_t i = 0; i < allowed.size(); ++i) {
      if (std::find(allowed.begin(), allowed.begin() + static_cast<std::ptrdiff_t>(i), allowed[i]) !=
          allowed.begin() + static_cast<std::ptrdiff_t>(i))
        continue;  // listed already
      if (!m.allow.empty()) m.allow += ", ";
      m.allow += allowed[i];
    }
    if (!m.allow.empty()) m.what = match::kind::method_not_allowed;
    return m;
  }

 private:
  struct entry {
    std::string method;
    std::string pattern;
    handler run;
    upgrade_handler take;
    stream_handler write;
  };
  std::vector<entry> routes_;
};

using router = basic_router<herd::net::tcp_socket>;

}  // namespace herd::http
