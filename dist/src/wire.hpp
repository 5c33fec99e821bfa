// Frames after the handshake: a 4-byte length (0: a tick), then 'p'
// (pass-through: no atom cache), the control message and, for sends, the
// payload — each a term with its own 131. Encoded with ei; decoded with
// a bounded scanner (etf_scan.hpp) that trusts no length a peer wrote.
#pragma once
#include <herd/actors/pid.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace herd::dist::detail {

// Control message tags (erts' dist.h) this session handles.
enum ctl : long {
  ctl_link = 1, ctl_send = 2, ctl_exit = 3, ctl_unlink = 4, ctl_reg_send = 6, ctl_group_leader = 7,
  ctl_exit2 = 8, ctl_send_tt = 12, ctl_reg_send_tt = 16, ctl_monitor_p = 19, ctl_demonitor_p = 20,
  ctl_monitor_p_exit = 21, ctl_send_sender = 22,
};

struct self_id {
  std::string name;
  uint32_t creation;
};

// A whole frame (length included) carrying payload to a remote pid.
std::string frame_send(const self_id& me, herd::pid from, herd::pid to, std::string_view payload,
                       bool send_sender);
// ... to {name, node}.
std::string frame_reg_send(const self_id& me, herd::pid from, std::string_view name, std::string_view payload);

// A frame's body (after the length), decoded.
struct incoming {
  long op = 0;
  herd::pid from;          // when the control message names one
  herd::pid to;            // SEND*: local or no_pid (not ours)
  std::string to_name;     // REG_SEND*
  std::string_view payload;
  // MONITOR_P / DEMONITOR_P: the terms as they came (without 131), to be
  // echoed in MONITOR_P_EXIT.
  std::string_view from_raw, to_raw, ref_raw;
};
// nullopt: not a frame this node understands (the caller drops the
// connection); `why` (when given) says what was wrong. Bounded: it reads
// nothing past `body` whatever lengths the frame's terms claim.
std::optional<incoming> decode_frame(const self_id& me, std::string_view body, std::string* why = nullptr);

// MONITOR_P_EXIT {21, ToProc, FromPid, Ref, Reason}: a monitor a remote
// process holds on one of ours fired. `reason_term` without 131.
std::string frame_monitor_exit(std::string_view to_raw, std::string_view from_raw, std::string_view ref_raw,
                               std::string_view reason_term);
// An exit reason as the term Erlang would see: normal, shutdown, killed,
// noproc, or {Type, What} (binaries) for an error.
std::string reason_term(int kind, const std::string& type, const std::string& what);

// net_kernel's is_auth call ({'$gen_call', {From, Tag}, {is_auth, _}}): the
// reply frame `{Tag, yes}` to From, or "" when payload is something else.
std::string is_auth_reply(const self_id& me, std::string_view payload, bool send_sender);

// For ping: {'$gen_call', {Self, Ref}, {is_auth, MyName}} with a fresh ref
// (returned in ref_out, ETF of the ref alone, to match the reply).
std::string is_auth_call(const self_id& me, herd::pid self, std::string& ref_out);
// True when payload is {Ref, yes} for the ref is_auth_call made.
bool is_auth_yes(std::string_view payload, std::string_view ref);

}  // namespace herd::dist::detail
