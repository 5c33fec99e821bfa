// herd calling a gen_server on another node (gen.hpp): '$gen_call' with a
// fresh reference as Tag, the reply found by its first bytes from a receive
// mark. As OTP's gen:do_call, the caller monitors the server (by pid, or by
// {name, node}) for the length of the call: the monitor request goes out on
// the node's connection before the call, so a name not registered there is
// noproc at once, a server that dies mid-call is `exited` with its reason,
// and a connection that ends is nodedown (the monitor's noconnection).
#include <herd/actors/call.hpp>
#include <herd/actors/links.hpp>
#include <herd/actors/process.hpp>
#include <herd/actors/receive.hpp>
#include <herd/actors/registry.hpp>
#include <herd/actors/send.hpp>
#include <herd/dist/gen.hpp>
#include <herd/dist/node.hpp>
#include <herd/dist/term_codec.hpp>

#include <atomic>
#include <cstring>

#include "state.hpp"

namespace herd::dist {

std::string call_failure::message() const {
  const char* what = "?";
  switch (code) {
    case call_errc::timeout: what = "timeout"; break;
    case call_errc::nodedown: what = "nodedown"; break;
    case call_errc::not_started: what = "not_started"; break;
    case call_errc::bad_request: what = "bad_request"; break;
    case call_errc::noproc: what = "noproc"; break;
    case call_errc::exited: what = "exited"; break;
    case call_errc::bad_reply: what = "bad_reply"; break;
  }
  return detail.empty() ? std::string(what) : std::string(what) + ": " + detail;
}

namespace {

using namespace std::chrono;

struct target {
  herd::pid pid;          // or
  std::string_view name;  // on
  std::string_view node;
};

std::optional<herd::term> self_term() {
  auto d = describe(herd::self());
  if (!d) return std::nullopt;
  return herd::term::pid(herd::erl_pid{herd::atom(d->node), d->id, d->serial, d->creation});
}

herd::term fresh_ref(const std::string& node, uint32_t creation) {
  static std::atomic<uint64_t> next{1};
  uint64_t n = next.fetch_add(1, std::memory_order_relaxed);
  herd::erl_ref r{herd::atom(node), creation, 3, {}};
  r.ids[0] = uint32_t(n & 0x3ffff);  // OTP keeps 18 bits in the first word
  r.ids[1] = uint32_t(n >> 18);
  r.ids[2] = 0x6e6c6c63;             // "gen call": our refs never collide with is_auth's
  return herd::term::reference(r);
}

call_result<herd::term> call_local(herd::pid to, const herd::term& req, milliseconds timeout) {
  try {
    return herd::call<herd::term>(to, req, timeout);
  } catch (const herd::call_error& e) {
    switch (e.kind()) {
      case herd::call_error::timeout: return call_failure{call_errc::timeout, e.what()};
      case herd::call_error::noproc: return call_failure{call_errc::noproc, e.what()};
      default: return call_failure{call_errc::exited, e.what()};
    }
  }
}

call_result<herd::term> call_remote(const target& t, const herd::term& req, milliseconds timeout) {
  herd::detail::require_process("herd::dist::call");
  std::string me_node;
  uint32_t creation = 0;
  {
    rt::lock_guard g(detail::state().mu);
    if (!detail::state().running) return call_failure{call_errc::not_started};
    me_node = detail::state().me.name;
    creation = detail::state().me.creation;
  }
  std::string node(t.node);
  if (node == me_node) {
    herd::pid p = t.pid;
    if (!p.valid()) {
      auto w = herd::whereis(t.name);
      if (!w) return call_failure{call_errc::noproc, std::string(t.name) + " is not registered"};
      p = *w;
    }
    return call_local(p, req, timeout);
  }
  auto deadline = steady_clock::now() + timeout;
  if (auto c = connect(node, timeout); !c) return call_failure{call_errc::nodedown, c.error().message()};
  auto from = self_term();
  if (!from) return call_failure{call_errc::not_started};
  herd::term ref = fresh_ref(me_node, creation);
  std::string payload;
  try {
    payload = herd::term_to_binary(herd::term::tuple(
        {herd::atom("$gen_call"), herd::term::tuple({*from, ref}), req}));
  } catch (const std::exception& e) {
    return call_failure{call_errc::bad_request, e.what()};
  }
  // The reply is {Ref, Reply}: 131, SMALL_TUPLE_EXT 2, then the ref's bytes
  // (the encoding is canonical: BEAM echoes it byte for byte).
  std::string prefix = "\x83\x68\x02";
  herd::encode_term(ref, prefix);
  herd::monitor_ref mon = t.pid.valid() ? herd::monitor(t.pid) : herd::monitor(t.name, node);
  herd::receive_mark mark = herd::mark_mailbox();
  bool sent = t.pid.valid() ? send(t.pid, std::move(payload)) : send(t.name, t.node, std::move(payload));
  std::optional<call_result<herd::term>> out;
  if (!sent) out = call_failure{call_errc::nodedown, "cannot send to " + node};
  auto left = duration_cast<milliseconds>(deadline - steady_clock::now());
  if (!out)
    herd::receive_after(
        mark,
        herd::when([&](const etf_message& m) {
                     return m.bytes.size() > prefix.size() && std::memcmp(m.bytes.data(), prefix.data(), prefix.size()) == 0;
                   },
                   [&](etf_message& m) {
                     auto r = m.term();
                     if (!r || !r->is_tuple() || r->size() != 2) out = call_failure{call_errc::bad_reply, "undecodable reply"};
                     else out = (*r)[1];
                   }),
        herd::when([&](const herd::down& d) { return d.ref == mon; },
                   [&](const herd::down& d) {
                     switch (d.reason.kind()) {
                       case herd::exit_kind::noproc:
                         out = call_failure{call_errc::noproc, t.pid.valid() ? t.pid.to_string() + " on " + node + " is not alive"
                                                                             : std::string(t.name) + " is not registered on " + node};
                         break;
                       case herd::exit_kind::noconnection:
                         out = call_failure{call_errc::nodedown, node + " went down during the call"};
                         break;
                       default: out = call_failure{call_errc::exited, d.reason.to_string()};
                     }
                   }),
        herd::after(std::max(left, milliseconds(0)), [&] {
          out = call_failure{call_errc::timeout, "no reply within " + std::to_string(timeout.count()) + " ms"};
        }));
  herd::demonitor(mon);  // a DOWN after the reply (or the timeout) is dropped
  return std::move(*out);
}

std::string cast_payload(const herd::term& msg) {
  return herd::term_to_binary(herd::term::tuple({herd::atom("$gen_cast"), msg}));
}

}  // namespace

call_result<herd::term> call(herd::pid to, const herd::term& request, milliseconds timeout) {
  if (!to.is_remote()) {
    herd::detail::require_process("herd::dist::call");
    return call_local(to, request, timeout);
  }
  auto d = describe(to);
  if (!d) return call_failure{call_errc::not_started, "unknown remote pid"};
  return call_remote(target{to, {}, d->node}, request, timeout);
}

call_result<herd::term> call(std::string_view name, std::string_view node, const herd::term& request,
                             milliseconds timeout) {
  return call_remote(target{herd::no_pid, name, node}, request, timeout);
}

bool cast(herd::pid to, const herd::term& msg) {
  if (!to.is_remote()) {
    herd::cast(to, msg);
    return to.valid();
  }
  return send(to, cast_payload(msg));
}

bool cast(std::string_view name, std::string_view node, const herd::term& msg) {
  if (node == this_node()) return herd::cast(name, msg);
  return send(name, node, cast_payload(msg));
}

}  // namespace herd::dist
