#include "wire.hpp"

#include <ei.h>

#include <atomic>
#include <cstring>

#include "bytes.hpp"
#include "remote_pids.hpp"

namespace herd::dist::detail {

namespace {

struct xbuf {
  ei_x_buff b;
  xbuf() { ei_x_new(&b); }
  ~xbuf() { ei_x_free(&b); }
  xbuf(const xbuf&) = delete;
  std::string_view view() const { return {b.buff, std::size_t(b.index)}; }
};

erlang_pid to_erlang(const self_id& me, herd::pid p) {
  erlang_pid e{};
  if (auto r = p.is_remote() ? lookup_remote(p) : std::nullopt) {
    std::snprintf(e.node, sizeof e.node, "%s", r->node.c_str());
    e.num = r->id;
    e.serial = r->serial;
    e.creation = r->creation;
  } else {
    std::snprintf(e.node, sizeof e.node, "%s", me.name.c_str());
    e.num = p.index;
    e.serial = p.generation;
    e.creation = me.creation;
  }
  return e;
}

herd::pid from_erlang(const self_id& me, const erlang_pid& e) {
  if (me.name == e.node) {
    if (e.creation != me.creation || e.num >= remote_pid_bit) return herd::no_pid;  // an earlier incarnation
    return herd::pid{e.num, e.serial};
  }
  return intern_remote(remote_pid{e.node, e.num, e.serial, e.creation});
}

std::string finish(const xbuf& control, std::string_view payload) {
  std::string f;
  put32(f, uint32_t(1 + control.view().size() + payload.size()));
  f += 'p';
  f += control.view();
  f += payload;
  return f;
}

void encode_pid(ei_x_buff* b, const self_id& me, herd::pid p) {
  erlang_pid e = to_erlang(me, p);
  ei_x_encode_pid(b, &e);
}

}  // namespace

std::string frame_send(const self_id& me, herd::pid from, herd::pid to, std::string_view payload,
                       bool send_sender) {
  xbuf c;
  ei_x_encode_version(&c.b);
  ei_x_encode_tuple_header(&c.b, 3);
  if (send_sender && from.valid()) {
    ei_x_encode_long(&c.b, ctl_send_sender);
    encode_pid(&c.b, me, from);
  } else {
    ei_x_encode_long(&c.b, ctl_send);
    ei_x_encode_atom(&c.b, "");
  }
  encode_pid(&c.b, me, to);
  return finish(c, payload);
}

std::string frame_reg_send(const self_id& me, herd::pid from, std::string_view name, std::string_view payload) {
  xbuf c;
  ei_x_encode_version(&c.b);
  ei_x_encode_tuple_header(&c.b, 4);
  ei_x_encode_long(&c.b, ctl_reg_send);
  // A REG_SEND must name a sender; an outside thread sends as the node's
  // "pid 0" (as ei's C nodes do).
  encode_pid(&c.b, me, from.valid() ? from : herd::pid{0, 0});
  ei_x_encode_atom(&c.b, "");
  ei_x_encode_atom_len(&c.b, name.data(), int(name.size()));
  return finish(c, payload);
}

std::optional<incoming> decode_frame(const self_id& me, std::string_view body) {
  if (body.empty() || body[0] != 'p') return std::nullopt;
  const char* buf = body.data();
  int i = 1, version = 0, arity = 0;
  long op = 0;
  if (ei_decode_version(buf, &i, &version) || ei_decode_tuple_header(buf, &i, &arity) || arity < 1 ||
      ei_decode_long(buf, &i, &op))
    return std::nullopt;
  incoming in;
  in.op = op;
  erlang_pid p{};
  char atom[MAXATOMLEN_UTF8];
  switch (op) {
    case ctl_send:
    case ctl_send_tt:
      if (ei_skip_term(buf, &i) || ei_decode_pid(buf, &i, &p)) return std::nullopt;
      in.to = from_erlang(me, p);
      break;
    case ctl_send_sender:
      if (ei_decode_pid(buf, &i, &p)) return std::nullopt;
      in.from = from_erlang(me, p);
      if (ei_decode_pid(buf, &i, &p)) return std::nullopt;
      in.to = from_erlang(me, p);
      break;
    case ctl_reg_send:
    case ctl_reg_send_tt:
      if (ei_decode_pid(buf, &i, &p)) return std::nullopt;
      in.from = from_erlang(me, p);
      if (ei_skip_term(buf, &i) || ei_decode_atom(buf, &i, atom)) return std::nullopt;
      in.to_name = atom;
      break;
    case ctl_monitor_p:
    case ctl_demonitor_p: {
      // {19|20, FromPid, ToProc, Ref}; ToProc a pid or a registered name.
      int a = i;
      if (ei_skip_term(buf, &i)) return std::nullopt;
      in.from_raw = body.substr(std::size_t(a), std::size_t(i - a));
      a = i;
      int type = 0, size = 0;
      if (ei_get_type(buf, &i, &type, &size)) return std::nullopt;
      if (type == ERL_ATOM_EXT || type == ERL_SMALL_ATOM_EXT || type == ERL_ATOM_UTF8_EXT ||
          type == ERL_SMALL_ATOM_UTF8_EXT) {
        if (ei_decode_atom(buf, &i, atom)) return std::nullopt;
        in.to_name = atom;
      } else {
        if (ei_decode_pid(buf, &i, &p)) return std::nullopt;
        in.to = from_erlang(me, p);
      }
      in.to_raw = body.substr(std::size_t(a), std::size_t(i - a));
      a = i;
      if (ei_skip_term(buf, &i) || std::size_t(i) > body.size()) return std::nullopt;
      in.ref_raw = body.substr(std::size_t(a), std::size_t(i - a));
      return in;
    }
    default:
      return in;  // not handled yet: links, monitors, exits (next session)
  }
  // Anything left in the control tuple (a trace token) is skipped.
  for (int k = (op == ctl_reg_send || op == ctl_reg_send_tt) ? 4 : 3; k < arity; ++k)
    if (ei_skip_term(buf, &i)) return std::nullopt;
  // ei's decoders trust the lengths they read: a frame whose terms claim
  // more than it holds is refused here (see docs/distribution.md, "Limits").
  if (std::size_t(i) > body.size()) return std::nullopt;
  in.payload = body.substr(std::size_t(i));
  return in;
}

std::string frame_monitor_exit(std::string_view to_raw, std::string_view from_raw, std::string_view ref_raw,
                               std::string_view reason) {
  xbuf c;
  ei_x_encode_version(&c.b);
  ei_x_encode_tuple_header(&c.b, 5);
  ei_x_encode_long(&c.b, ctl_monitor_p_exit);
  std::string control(c.view());
  control += to_raw;
  control += from_raw;
  control += ref_raw;
  control += reason;
  std::string f;
  put32(f, uint32_t(1 + control.size()));
  f += 'p';
  return f + control;
}

std::string reason_term(int kind, const std::string& type, const std::string& what) {
  xbuf r;
  switch (kind) {
    case 0: ei_x_encode_atom(&r.b, "normal"); break;
    case 1: ei_x_encode_atom(&r.b, "shutdown"); break;
    case 2:
    case 3: ei_x_encode_atom(&r.b, "killed"); break;
    case 5: ei_x_encode_atom(&r.b, "noproc"); break;
    case 6: ei_x_encode_atom(&r.b, "noconnection"); break;
    default:
      ei_x_encode_tuple_header(&r.b, 2);
      ei_x_encode_binary(&r.b, type.data(), long(type.size()));
      ei_x_encode_binary(&r.b, what.data(), long(what.size()));
  }
  return std::string(r.view());
}

std::string is_auth_reply(const self_id& me, std::string_view payload, bool send_sender) {
  const char* buf = payload.data();
  int i = 0, version = 0, arity = 0;
  char atom[MAXATOMLEN_UTF8];
  if (ei_decode_version(buf, &i, &version) || ei_decode_tuple_header(buf, &i, &arity) || arity != 3 ||
      ei_decode_atom(buf, &i, atom) || std::strcmp(atom, "$gen_call") != 0 ||
      ei_decode_tuple_header(buf, &i, &arity) || arity != 2)
    return {};
  erlang_pid from{};
  if (ei_decode_pid(buf, &i, &from)) return {};
  int tag_start = i;
  if (ei_skip_term(buf, &i)) return {};
  std::string_view tag = payload.substr(std::size_t(tag_start), std::size_t(i - tag_start));
  if (ei_decode_tuple_header(buf, &i, &arity) || arity != 2 || ei_decode_atom(buf, &i, atom) ||
      std::strcmp(atom, "is_auth") != 0)
    return {};
  // {Tag, yes}, the tag copied as it came (OTP 25: [alias | Ref]).
  xbuf r;
  ei_x_encode_version(&r.b);
  ei_x_encode_tuple_header(&r.b, 2);
  std::string reply(r.view());
  reply += tag;
  xbuf yes;
  ei_x_encode_atom(&yes.b, "yes");
  reply += yes.view();
  return frame_send(me, herd::no_pid, from_erlang(me, from), reply, send_sender);
}

std::string is_auth_call(const self_id& me, herd::pid self, std::string& ref_out) {
  static std::atomic<uint32_t> next{1};
  erlang_ref ref{};
  std::snprintf(ref.node, sizeof ref.node, "%s", me.name.c_str());
  ref.len = 3;
  uint32_t n = next.fetch_add(1, std::memory_order_relaxed);
  ref.n[0] = n & 0x3ffff;
  ref.n[1] = n >> 18;
  ref.n[2] = 0x5eed;
  ref.creation = me.creation;
  xbuf rb;
  ei_x_encode_ref(&rb.b, &ref);
  ref_out = std::string(rb.view());
  xbuf c;
  ei_x_encode_version(&c.b);
  ei_x_encode_tuple_header(&c.b, 3);
  ei_x_encode_atom(&c.b, "$gen_call");
  ei_x_encode_tuple_header(&c.b, 2);
  encode_pid(&c.b, me, self);
  std::string out(c.view());
  out += ref_out;
  xbuf rest;
  ei_x_encode_tuple_header(&rest.b, 2);
  ei_x_encode_atom(&rest.b, "is_auth");
  ei_x_encode_atom(&rest.b, me.name.c_str());
  out += rest.view();
  return out;
}

bool is_auth_yes(std::string_view payload, std::string_view ref) {
  const char* buf = payload.data();
  int i = 0, version = 0, arity = 0;
  if (ei_decode_version(buf, &i, &version) || ei_decode_tuple_header(buf, &i, &arity) || arity != 2) return false;
  erlang_ref got{}, want{};
  int j = 0;
  if (ei_decode_ref(buf, &i, &got) || ei_decode_ref(ref.data(), &j, &want)) return false;
  if (got.len != want.len || got.creation != want.creation || std::strcmp(got.node, want.node) != 0) return false;
  for (int k = 0; k < got.len; ++k)
    if (got.n[k] != want.n[k]) return false;
  char atom[MAXATOMLEN_UTF8];
  return ei_decode_atom(buf, &i, atom) == 0 && std::strcmp(atom, "yes") == 0;
}

}  // namespace herd::dist::detail
