// The control messages of links, monitors and exit signals, encoded and
// decoded with herd::term's codec (bounded: a frame cannot make it read past
// its end). Pids of this node map to local herd pids (of this incarnation
// only); other nodes' pids are interned (remote_pids.cpp).
#include <herd/dist/term_codec.hpp>

#include "bytes.hpp"
#include "remote_pids.hpp"
#include "wire.hpp"

namespace herd::dist::detail {

namespace {

term pid_term(const self_id& me, herd::pid p) {
  if (p.is_remote())
    if (auto r = lookup_remote(p)) return term::pid(erl_pid{atom(r->node), r->id, r->serial, r->creation});
  // Sent from outside any process (no_pid): as the node's "pid 0", as REG_SEND does.
  if (!p.valid() || p.is_remote()) p = herd::pid{0, 0};
  return term::pid(erl_pid{atom(me.name), p.index, p.generation, me.creation});
}

herd::pid pid_of(const self_id& me, const erl_pid& e) {
  std::string_view node = e.node.text();
  if (node == me.name) {
    if (e.creation != me.creation || e.id >= remote_pid_bit) return herd::no_pid;  // an earlier incarnation
    return herd::pid{e.id, e.serial};
  }
  return intern_remote(remote_pid{std::string(node), e.id, e.serial, e.creation});
}

// A monitor_ref's id (below 2^62) as a 3-word reference of this node: the
// peer echoes it in MONITOR_P_EXIT, and ref_of turns it back.
term ref_term(const self_id& me, uint64_t ref) {
  erl_ref r;
  r.node = atom(me.name);
  r.creation = me.creation;
  r.len = 3;
  r.ids = {uint32_t(ref & 0x3ffff), uint32_t(ref >> 18), uint32_t(ref >> 50), 0, 0};
  return term::reference(r);
}

uint64_t ref_of(const self_id& me, const term& t) {
  if (!t.is_reference()) return 0;
  const erl_ref& r = t.as_reference();
  if (r.node.text() != me.name || r.creation != me.creation || r.len != 3 || r.ids[0] > 0x3ffff || r.ids[2] >= 4096)
    return 0;
  return uint64_t(r.ids[0]) | uint64_t(r.ids[1]) << 18 | uint64_t(r.ids[2]) << 50;
}

std::string frame_of(const term& control, const term* payload = nullptr) {
  std::string body = "p\x83";
  encode_term(control, body);
  if (payload) {
    body += '\x83';
    encode_term(*payload, body);
  }
  std::string f;
  put32(f, uint32_t(body.size()));
  return f + body;
}

bool is_name(const term& t) { return t.is_atom(); }

}  // namespace

std::optional<link_frame> decode_link_frame(const self_id& me, std::string_view body) {
  if (body.size() < 2 || body[0] != 'p' || uint8_t(body[1]) != 131) return std::nullopt;
  std::size_t at = 2;
  auto ctl = decode_term(body, at);
  if (!ctl || !ctl->is_tuple() || ctl->size() < 3 || !(*ctl)[0].is_integer()) return std::nullopt;
  const term& c = *ctl;
  link_frame f;
  f.op = long(c[0].to_int64().value_or(-1));
  // Where From, To and the reason are; -1: the reason is the payload.
  std::size_t from = 1, to = 2, size = 3;
  int reason = -1, ref = -1;
  switch (f.op) {
    case ctl_link:
    case ctl_unlink: break;
    case ctl_exit:
    case ctl_exit2: size = 4, reason = 3; break;
    case ctl_exit_tt:
    case ctl_exit2_tt: size = 5, reason = 4; break;
    case ctl_payload_exit:
    case ctl_payload_exit2: break;
    case ctl_payload_exit_tt:
    case ctl_payload_exit2_tt: size = 4; break;
    case ctl_monitor_p_exit: size = 5, ref = 3, reason = 4; break;
    case ctl_payload_monitor_p_exit: size = 4, ref = 3; break;
    case ctl_unlink_id:
    case ctl_unlink_id_ack: from = 2, to = 3, size = 4; break;
    default: return std::nullopt;
  }
  if (c.size() < size) return std::nullopt;
  bool named = f.op == ctl_monitor_p_exit || f.op == ctl_payload_monitor_p_exit;
  if (!c[to].is_pid() || !(c[from].is_pid() || (named && is_name(c[from])))) return std::nullopt;
  f.from_t = c[from];
  f.to_t = c[to];
  if (c[from].is_pid()) f.from = pid_of(me, c[from].as_pid());
  f.to = pid_of(me, c[to].as_pid());
  if (f.to.is_remote()) f.to = herd::no_pid;  // not a pid of this node
  if (f.op == ctl_unlink_id || f.op == ctl_unlink_id_ack) f.id = c[1];
  if (ref >= 0) f.ref = ref_of(me, c[std::size_t(ref)]);
  bool exits = f.op != ctl_link && f.op != ctl_unlink && f.op != ctl_unlink_id && f.op != ctl_unlink_id_ack;
  if (exits) {
    if (reason >= 0) {
      f.reason = reason_from_term(c[std::size_t(reason)]);
    } else {
      if (at >= body.size() || uint8_t(body[at]) != 131) return std::nullopt;
      ++at;
      auto r = decode_term(body, at);
      if (!r) return std::nullopt;
      f.reason = reason_from_term(*r);
    }
  }
  return f;
}

std::string frame_link(const self_id& me, long op, herd::pid from, herd::pid to) {
  return frame_of(term::tuple({term(op), pid_term(me, from), pid_term(me, to)}));
}

std::string frame_exit(const self_id& me, bool via_link, herd::pid from, herd::pid to, const exit_reason& r,
                       bool payload) {
  if (payload) {
    term reason = reason_to_term(r);
    long op = via_link ? ctl_payload_exit : ctl_payload_exit2;
    return frame_of(term::tuple({term(op), pid_term(me, from), pid_term(me, to)}), &reason);
  }
  long op = via_link ? ctl_exit : ctl_exit2;
  return frame_of(term::tuple({term(op), pid_term(me, from), pid_term(me, to), reason_to_term(r)}));
}

std::string frame_exit_raw(const term& from, const term& to, const exit_reason& r, bool payload) {
  if (payload) {
    term reason = reason_to_term(r);
    return frame_of(term::tuple({term(long(ctl_payload_exit)), from, to}), &reason);
  }
  return frame_of(term::tuple({term(long(ctl_exit)), from, to, reason_to_term(r)}));
}

std::string frame_monitor(const self_id& me, long op, herd::pid from, herd::pid to, std::string_view name,
                          uint64_t ref) {
  term target = name.empty() ? pid_term(me, to) : term(atom(name));
  return frame_of(term::tuple({term(op), pid_term(me, from), target, ref_term(me, ref)}));
}

std::string frame_unlink_id(const self_id& me, uint64_t id, herd::pid from, herd::pid to) {
  return frame_of(term::tuple({term(long(ctl_unlink_id)), term(long(id)), pid_term(me, from), pid_term(me, to)}));
}

std::string frame_unlink_id_ack(const term& id, const term& from, const term& to) {
  return frame_of(term::tuple({term(long(ctl_unlink_id_ack)), id, from, to}));
}

term reason_to_term(const exit_reason& r) {
  switch (r.kind()) {
    case exit_kind::normal: return atom("normal");
    case exit_kind::shutdown:
      if (r.what().empty()) return atom("shutdown");
      return term::tuple({atom("shutdown"), term::binary(r.what())});
    case exit_kind::kill: return atom("kill");
    case exit_kind::killed: return atom("killed");
    case exit_kind::noproc: return atom("noproc");
    case exit_kind::noconnection: return atom("noconnection");
    case exit_kind::error: break;
  }
  return term::tuple({term::binary(r.type()), term::binary(r.what())});
}

exit_reason reason_from_term(const term& t) {
  if (t.is_atom()) {
    std::string_view a = t.as_atom().text();
    if (a == "normal") return exit_reason::normal();
    if (a == "shutdown") return exit_reason::shutdown();
    if (a == "kill") return exit_reason::kill();
    if (a == "killed") return exit_reason::killed();
    if (a == "noproc") return exit_reason::noproc();
    if (a == "noconnection") return exit_reason::noconnection();
  } else if (t.is_tuple() && t.size() == 2) {
    if (t[0].is_atom(atom("shutdown")))
      return exit_reason::shutdown(t[1].is_binary() ? std::string(t[1].bytes()) : to_string(t[1]));
    if (t[0].is_binary() && t[1].is_binary()) return exit_reason::error(std::string(t[0].bytes()), std::string(t[1].bytes()));
  }
  return exit_reason::error("erlang", to_string(t));
}

}  // namespace herd::dist::detail
