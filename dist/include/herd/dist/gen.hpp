// OTP's gen_server protocol across nodes, both ways, with herd::term.
//
// Erlang calls a herd::server: the server takes herd::term requests, and is
// exported once so that '$gen_call' / '$gen_cast' reaching it from another
// node arrive as call_request<herd::term> / cast_request<herd::term>:
//
//   struct echo : herd::server<echo> {
//     using calls = herd::types<herd::term>;
//     using casts = herd::types<herd::term>;
//     using infos = herd::types<herd::dist::etf_message>;   // anything else sent to it
//     herd::term handle_call(const herd::term& req, const herd::from&) { return req; }
//     void handle_cast(const herd::term&) {}
//     void handle_info(const herd::dist::etf_message&) {}
//   };
//   auto s = herd::start_server<echo>(herd::spawn_options{.name = "echo"});
//   herd::dist::export_server(s);          // gen_server:call({echo, 'gw@host'}, hi) -> hi
//
// The reply (returned, or herd::reply(from, term) later) goes back as
// {Tag, Reply} to the caller, Tag as it came (OTP 25: [alias | Ref]). A
// handler that throws ends the server, and the Erlang caller's monitor turns
// that into the call's exit, as in OTP.
//
// herd calls a gen_server on any node (BEAM or herd):
//
//   auto r = herd::dist::call("echo", "beam@host", herd::atom("ping"), 5s);
//   if (r) use(*r); else log(r.error().message());  // timeout, nodedown, ...
//   herd::dist::cast("counter", "beam@host", herd::term::tuple({herd::atom("tick"), 1}));
//
// Docs: docs/distribution.md ("gen_server across nodes").
#pragma once
#include <herd/actors/pid.hpp>
#include <herd/actors/result.hpp>
#include <herd/dist/term.hpp>

#include <chrono>
#include <string>
#include <string_view>

namespace herd::dist {

// From any thread: '$gen_call' and '$gen_cast' from other nodes to `server`
// (a local process, by pid or through the name it is registered under)
// reach it as call_request<herd::term> / cast_request<herd::term>; other
// messages from other nodes still arrive as etf_message. Lasts as long as
// the process does. False for a remote or invalid pid.
bool export_server(herd::pid server);

enum class call_errc : uint8_t {
  timeout,      // no reply within the timeout
  nodedown,     // the connection to the server's node is (or went) down
  not_started,  // distribution is not running, or the pid is not remote
  bad_request,  // the request cannot be encoded (a term too deep to encode)
  noproc,       // no process registered under the name there, or the pid is dead
  exited,       // the server exited during the call (the detail gives its reason)
  bad_reply,    // a reply with the call's tag that does not decode
};

struct call_failure {
  call_errc code;
  std::string detail{};
  std::string message() const;
};

template <class T>
using call_result = herd::result<T, call_failure>;

// From a process: gen_server:call(To, Request, Timeout). Monitors the
// server (as gen:do_call does), sends {'$gen_call', {self(), Ref}, Request}
// and waits (selectively, from a receive mark) for {Ref, Reply} or the
// monitor's DOWN. A late reply after a timeout stays in the
// mailbox as an etf_message, as in OTP before aliases.
call_result<herd::term> call(herd::pid to, const herd::term& request,
                             std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));
// To the process registered as `name` on `node` ({Name, Node}).
call_result<herd::term> call(std::string_view name, std::string_view node, const herd::term& request,
                             std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));

// Any thread: gen_server:cast — {'$gen_cast', Msg}, no reply. False when it
// cannot go (not started, no such node).
bool cast(herd::pid to, const herd::term& msg);
bool cast(std::string_view name, std::string_view node, const herd::term& msg);

}  // namespace herd::dist
