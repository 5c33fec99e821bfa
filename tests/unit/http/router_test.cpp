// The router's matching rules: literal and :name segments, first match
// wins, 404 vs 405 with Allow, HEAD through GET, upgrade routes by path.
#include <herd/http/router.hpp>

#include <catch2/catch.hpp>

using herd::http::bindings;
using herd::http::request;
using herd::http::response;
using kind = herd::http::router::match::kind;

TEST_CASE("patterns bind whole non-empty segments", "[http][router]") {
  bindings b;
  CHECK(herd::http::match_pattern("/push/user/:id", "/push/user/7", &b));
  CHECK(b.get("id") == "7");
  CHECK_FALSE(b.get("room"));
  bindings none;
  CHECK_FALSE(herd::http::match_pattern("/push/user/:id", "/push/user/", &none));
  CHECK_FALSE(herd::http::match_pattern("/push/user/:id", "/push/user/7/x", &none));
  CHECK_FALSE(herd::http::match_pattern("/push/user/:id", "/push/user", &none));
  CHECK(none.values.empty());  // a failed match leaves nothing bound
  CHECK(herd::http::match_pattern("/", "/", nullptr));
  CHECK_FALSE(herd::http::match_pattern("/a", "/ab", nullptr));
  CHECK_FALSE(herd::http::match_pattern("/a", "a", nullptr));
}

TEST_CASE("the router answers 404 for an unknown path and 405 with Allow for a wrong method", "[http][router]") {
  herd::http::router r;
  auto ok = [](request&, const bindings&) { return response::text(200, "ok"); };
  r.get("/healthz", ok).post("/push/room/:room", ok).put("/push/room/:room", ok);
  r.upgrade("/ws", [](herd::net::tcp_socket, request, std::string) {});

  CHECK(r.find("GET", "/nope").what == kind::not_found);
  auto m = r.find("GET", "/push/room/lobby");
  CHECK(m.what == kind::method_not_allowed);
  CHECK(m.allow == "POST, PUT");
  m = r.find("POST", "/push/room/lobby");
  CHECK(m.what == kind::handler);
  CHECK(m.bound.get("room") == "lobby");
  CHECK(r.find("HEAD", "/healthz").what == kind::handler);
  m = r.find("POST", "/healthz");
  CHECK(m.what == kind::method_not_allowed);
  CHECK(m.allow == "GET, HEAD");
  CHECK(r.find("GET", "/ws").what == kind::upgrade);
  CHECK(r.find("HEAD", "/ws").what == kind::method_not_allowed);
}
