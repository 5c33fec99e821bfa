// See gateway.hpp.
#include "gateway.hpp"

#include "connection.hpp"

#include <herd/actors.hpp>
#include <herd/http/response.hpp>
#include <herd/net/tcp.hpp>
#include <herd/tables/pg.hpp>
#include <herd/websocket/handshake.hpp>
#include <herd/websocket/serve.hpp>
#include <herd/websocket/utf8.hpp>

#include <cstdio>
#include <utility>

namespace push_gateway {
namespace {

namespace http = herd::http;

http::response json(int status, std::string body) {
  return http::response::text(status, std::move(body), "application/json");
}

http::response bad_request(std::string why) { return http::response::text(400, std::move(why) + "\n"); }

std::size_t hand_out(state& st, const herd::pid* begin, const herd::pid* end, std::string_view text) {
  if (begin == end) return 0;
  frame_msg m{std::make_shared<const std::string>(text)};
  for (auto* p = begin; p != end; ++p) herd::send(*p, m);
  auto n = static_cast<std::size_t>(end - begin);
  st.pushed.fetch_add(n, std::memory_order_relaxed);
  return n;
}

// A push route: the name checked, the body UTF-8 (its size was checked by
// the HTTP reader: max_body is max-message-bytes, over it 413).
http::handler push_route(state& st, bool room) {
  return [&st, room](http::request& q, const http::bindings& b) {
    std::string name(*b.get("name"));
    if (!valid_name(name))
      return bad_request(std::string(room ? "room" : "user") + " names are 1-64 characters of [A-Za-z0-9_.-]");
    if (!herd::ws::valid_utf8(q.body)) return bad_request("the body is not UTF-8");
    std::size_t n = room ? push_room(st, name, q.body) : push_user(st, name, q.body);
    return json(200, "{\"delivered\":" + std::to_string(n) + "}");
  };
}

// An answer that ends the connection, from the upgrade route (the HTTP loop
// has handed it the socket).
void refuse(herd::net::tcp_socket& s, const http::request& q, int status, std::string why) {
  std::string out;
  http::write_response(out, http::response::text(status, std::move(why) + "\n"),
                       {.version_minor = q.version_minor, .keep_alive = false});
  (void)s.send(out, std::chrono::seconds(5));
  (void)s.shutdown_write();
}

}  // namespace

bool valid_name(std::string_view s) noexcept {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
              c == '-';
    if (!ok) return false;
  }
  return true;
}

std::size_t push_user(state& st, const std::string& user, std::string_view text) {
  std::vector<herd::pid> to = st.presence.lookup_all(user);
  return hand_out(st, to.data(), to.data() + to.size(), text);
}

std::size_t push_room(state& st, std::string_view room, std::string_view text) {
  herd::pg::members m = herd::pg::get_members(rooms_scope, room);
  return hand_out(st, m.begin(), m.end(), text);
}

std::string stats_json(const state& st) {
  // Distinct keys of the bag: first/next step from key to key.
  std::size_t users = 0;
  for (auto k = st.presence.first(); k; k = st.presence.next(*k)) ++users;
  return "{\"connections\":" + std::to_string(st.connections.load(std::memory_order_relaxed)) +
         ",\"users\":" + std::to_string(users) +
         ",\"rooms\":" + std::to_string(herd::pg::which_groups(rooms_scope).size()) +
         ",\"pushed\":" + std::to_string(st.pushed.load(std::memory_order_relaxed)) +
         ",\"dropped\":" + std::to_string(herd::ws::counters().slow_consumers) + "}";
}

http::router make_router(state& st) {
  http::router r;
  r.get("/healthz", [](http::request&, const http::bindings&) { return http::response::text(200, "ok"); });
  r.get("/stats", [&st](http::request&, const http::bindings&) { return json(200, stats_json(st)); });
  r.post("/push/user/:name", push_route(st, false));
  r.post("/push/room/:name", push_route(st, true));
  r.upgrade("/ws", [&st](herd::net::tcp_socket s, http::request q, std::string rest) {
    auto user = q.query_param("user");
    if (!user || !valid_name(*user))
      return refuse(s, q, 400, "/ws?user=<id>: the id is 1-64 characters of [A-Za-z0-9_.-]");
    if (st.websockets.fetch_add(1, std::memory_order_relaxed) >= st.cfg.max_websockets) {
      st.websockets.fetch_sub(1, std::memory_order_relaxed);
      return refuse(s, q, 503, "the gateway is at --max-connections");
    }
    // From here the handler holds the count (its destructor gives it back,
    // the upgrade refused or not). serve() is the last call: the process
    // may hibernate inside it.
    auto h = std::make_unique<conn_handler>(st, std::string(*user));
    if (herd::ws::accept_upgrade(q, st.ws_opts->handshake).accepted) h->enter();
    (void)herd::ws::serve(std::move(s), q, rest, std::move(h), st.ws_opts);
  });
  return r;
}

bool start(state& st) {
  auto t = herd::table<std::string, herd::pid>::create(
      {.type = herd::table_type::bag, .access = herd::table_access::public_, .write_concurrency = true});
  if (!t) {
    std::fprintf(stderr, "push_gateway: cannot create the presence table\n");
    return false;
  }
  st.presence = std::move(*t);
  st.ws_opts = std::make_shared<const herd::ws::options>(herd::ws::options{
      .parser = {.max_message = st.cfg.max_message_bytes},
      .ping_interval = st.cfg.ping_interval,
      .timeout_code = 4000,
      .idle_hibernate = st.cfg.idle_hibernate,
  });
  return true;
}

}  // namespace push_gateway
