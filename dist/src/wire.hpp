// Frames after the handshake: a 4-byte length (0: a tick), then 'p'
// (pass-through: no atom cache), the control message and, for sends, the
// payload — each a term with its own 131. Encoded with ei; decoded with
// a bounded scanner (etf_scan.hpp) that trusts no length a peer wrote.
#pragma once
#include <herd/actors/exit_reason.hpp>
#include <herd/actors/pid.hpp>
#include <herd/dist/term.hpp>

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
// process holds on one of ours fired. `reason_term` without 131. `payload`
// (the peer announced DFLAG_EXIT_PAYLOAD): PAYLOAD_MONITOR_P_EXIT {28,
// ToProc, FromPid, Ref} with the reason as the frame's payload.
std::string frame_monitor_exit(std::string_view to_raw, std::string_view from_raw, std::string_view ref_raw,
                               std::string_view reason_term, bool payload = false);
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

// --- Links, monitors and exit signals (wire_links.cpp), with herd::term's
// bounded codec. ---

// The tags besides `ctl` above: the trace-token and payload forms of the
// exits (DFLAG_EXIT_PAYLOAD, OTP 22+, which we announce: a peer with it
// sends the payload forms, and so do we to it), and UNLINK_ID with its ACK
// (DFLAG_UNLINK_ID, which we announce too).
enum ctl_links : long {
  ctl_exit_tt = 13, ctl_exit2_tt = 18, ctl_payload_exit = 24, ctl_payload_exit_tt = 25, ctl_payload_exit2 = 26,
  ctl_payload_exit2_tt = 27, ctl_payload_monitor_p_exit = 28, ctl_unlink_id = 35, ctl_unlink_id_ack = 36,
};

// LINK, UNLINK(_ID), EXIT*, EXIT2* or MONITOR_P_EXIT from the peer.
struct link_frame {
  long op = 0;
  herd::pid from;           // the peer's process (no_pid: MONITOR_P_EXIT of a name monitor)
  herd::pid to;             // ours (no_pid: not a live incarnation of this node)
  herd::term from_t, to_t;  // both as they came, for a reply
  uint64_t ref = 0;         // MONITOR_P_EXIT: our monitor_ref's id (0: not a ref of ours)
  herd::term id;            // UNLINK_ID: its id, for the ack
  exit_reason reason;       // EXIT*, EXIT2*, MONITOR_P_EXIT
};
// nullopt: not such a frame, or malformed (the caller drops the connection).
std::optional<link_frame> decode_link_frame(const self_id& me, std::string_view body);

// Whole frames (length included).
std::string frame_link(const self_id& me, long op, herd::pid from, herd::pid to);  // LINK, UNLINK
// EXIT (through a link) or EXIT2 (exit/2); `payload` (the peer announced
// DFLAG_EXIT_PAYLOAD): PAYLOAD_EXIT {24, From, To} or PAYLOAD_EXIT2 {26,
// From, To} with the reason as the frame's payload, so a large reason is
// not part of the control message.
std::string frame_exit(const self_id& me, bool via_link, herd::pid from, herd::pid to, const exit_reason& r,
                       bool payload = false);
// EXIT {3, From, To, Reason} (PAYLOAD_EXIT with `payload`) back to the terms a frame came with.
std::string frame_exit_raw(const herd::term& from, const herd::term& to, const exit_reason& r, bool payload = false);
// MONITOR_P / DEMONITOR_P of a pid, or of `name` on the peer when not empty.
std::string frame_monitor(const self_id& me, long op, herd::pid from, herd::pid to, std::string_view name,
                          uint64_t ref);
std::string frame_unlink_id_ack(const herd::term& id, const herd::term& from, const herd::term& to);
// UNLINK_ID {35, Id, From, To}, for a peer with DFLAG_UNLINK_ID.
std::string frame_unlink_id(const self_id& me, uint64_t id, herd::pid from, herd::pid to);

// An exit reason as Erlang sees it: normal, shutdown ({shutdown, <<Detail>>}
// with a detail), kill, killed, noproc, noconnection, or {<<Type>>, <<What>>}
// for an error. And back: those atoms to their kinds, {shutdown, X} to a
// shutdown with X's text, {<<Type>>, <<What>>} to that error, any other term
// to error("erlang", its text in Erlang syntax).
herd::term reason_to_term(const exit_reason& r);
exit_reason reason_from_term(const herd::term& t);

}  // namespace herd::dist::detail
