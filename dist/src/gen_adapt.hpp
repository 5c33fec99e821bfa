// The seam between OTP's '$gen_call' / '$gen_cast' and herd::server
// (gen.hpp): the connection process hands what remote nodes send to an
// exported server to deliver_gen; the send hook hands the server's reply to
// a remote caller to deliver_gen_reply.
#pragma once
#include <herd/actors/message.hpp>
#include <herd/actors/pid.hpp>

#include <string>
#include <string_view>

namespace herd::dist::detail {

// From the connection process of `node`: `payload` (ETF, with 131) came
// from `from` to local `to`. True when `to` is exported and the payload is
// a '$gen_call' / '$gen_cast' — then it was delivered as call_request /
// cast_request<herd::term>; false: deliver it as usual.
bool deliver_gen(herd::pid to, herd::pid from, std::string_view payload, const std::string& node);
// The same for a send to a registered name.
bool deliver_gen(std::string_view name, herd::pid from, std::string_view payload, const std::string& node);

// The send hook: `m` is a reply_envelope<herd::term> to a remote caller.
// Sends {Tag, Reply} to it. Takes ownership of m.
bool deliver_gen_reply(herd::pid to, herd::detail::message* m) noexcept;
bool is_gen_reply(const herd::detail::message* m) noexcept;

// The connection to `node` ended: calls from there waiting for a reply are
// forgotten (their callers got nodedown / noconnection).
void forget_gen_calls(const std::string& node) noexcept;

}  // namespace herd::dist::detail
