#include "wire.hpp"

#include <herd/dist/term_codec.hpp>

#include <ei.h>

#include <atomic>
#include <cstring>

#include "bytes.hpp"
#include "etf_scan.hpp"
#include "term_tags.hpp"
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

herd::pid from_scanned(const self_id& me, const scanned_pid& e) {
  if (me.name == e.node) {
    if (e.creation != me.creation || e.num >= remote_pid_bit) return herd::no_pid;  // an earlier incarnation
    return herd::pid{e.num, e.serial};
  }
  return intern_remote(remote_pid{e.node, e.num, e.serial, e.creation});
}

void encode_pid(ei_x_buff* b, const self_id& me, herd::pid p) {
  erlang_pid e = to_erlang(me, p);
  ei_x_encode_pid(b, &e);
}

}  // namespace

// The control tuples of sends are written by hand, straight into the
// frame (one allocation, no ei buffer): they are on every message's path.
namespace {

void put_atom(std::string& f, std::string_view a) {
  if (a.size() <= 255) {
    f += char(herd::detail::etf::small_atom_utf8);
    f += char(a.size());
  } else {
    f += char(herd::detail::etf::atom_utf8);
    put16(f, uint32_t(a.size()));
  }
  f += a;
}

void put_pid(std::string& f, const self_id& me, herd::pid p) {
  f += char(herd::detail::etf::new_pid);
  if (auto r = p.is_remote() ? lookup_remote(p) : std::nullopt) {
    put_atom(f, r->node);
    put32(f, r->id);
    put32(f, r->serial);
    put32(f, r->creation);
  } else {
    put_atom(f, me.name);
    put32(f, p.index);
    put32(f, p.generation);
    put32(f, me.creation);
  }
}

std::string frame_head(std::size_t expect) {
  std::string f;
  f.reserve(expect);
  f.append(4, '\0');  // the length, set at the end
  f += 'p';
  f += char(herd::detail::etf::version);
  return f;
}

std::string frame_end(std::string f, std::string_view payload) {
  f += payload;
  uint32_t len = uint32_t(f.size() - 4);
  f[0] = char(len >> 24), f[1] = char(len >> 16), f[2] = char(len >> 8), f[3] = char(len);
  return f;
}

}  // namespace

std::string frame_send(const self_id& me, herd::pid from, herd::pid to, std::string_view payload,
                       bool send_sender) {
  std::string f = frame_head(8 + 2 * (me.name.size() + 16) + payload.size());
  f += char(herd::detail::etf::small_tuple);
  f += char(3);
  f += char(herd::detail::etf::small_integer);
  if (send_sender && from.valid()) {
    f += char(ctl_send_sender);
    put_pid(f, me, from);
  } else {
    f += char(ctl_send);
    put_atom(f, "");
  }
  put_pid(f, me, to);
  return frame_end(std::move(f), payload);
}

std::string frame_reg_send(const self_id& me, herd::pid from, std::string_view name, std::string_view payload) {
  std::string f = frame_head(12 + me.name.size() + 16 + name.size() + payload.size());
  f += char(herd::detail::etf::small_tuple);
  f += char(4);
  f += char(herd::detail::etf::small_integer);
  f += char(ctl_reg_send);
  // A REG_SEND must name a sender; an outside thread sends as the node's
  // "pid 0" (as ei's C nodes do).
  put_pid(f, me, from.valid() ? from : herd::pid{0, 0});
  put_atom(f, "");
  put_atom(f, name);
  return frame_end(std::move(f), payload);
}

std::optional<incoming> decode_frame(const self_id& me, std::string_view body, std::string* why) {
  auto refuse = [&](const char* what) -> std::optional<incoming> {
    if (why) *why = what;
    return std::nullopt;
  };
  if (body.empty() || body[0] != 'p') return refuse("not a pass-through frame ('p')");
  etf_scanner s(body, 1);
  uint32_t arity = 0;
  int64_t op = 0;
  if (!s.version() || !s.tuple_header(arity) || arity < 1 || !s.integer(op))
    return refuse(s.ok() ? "an empty control tuple" : s.why());
  incoming in;
  in.op = long(op);
  scanned_pid p;
  std::string atom;
  auto bad = [&]() { return refuse(s.why()); };
  // The elements each operation needs, by position; a control tuple too
  // short for its operation is refused, not read past.
  auto has = [&](uint32_t n) { return arity >= n; };
  switch (op) {
    case ctl_send:
    case ctl_send_tt:
      if (!has(3) || !s.skip() || !s.pid(p)) return has(3) ? bad() : refuse("a short SEND");
      in.to = from_scanned(me, p);
      break;
    case ctl_send_sender:
      if (!has(3) || !s.pid(p)) return has(3) ? bad() : refuse("a short SEND_SENDER");
      in.from = from_scanned(me, p);
      if (!s.pid(p)) return bad();
      in.to = from_scanned(me, p);
      break;
    case ctl_reg_send:
    case ctl_reg_send_tt:
      if (!has(4) || !s.pid(p)) return has(4) ? bad() : refuse("a short REG_SEND");
      in.from = from_scanned(me, p);
      if (!s.skip() || !s.atom(atom)) return bad();
      in.to_name = atom;
      break;
    case ctl_monitor_p:
    case ctl_demonitor_p: {
      // {19|20, FromPid, ToProc, Ref}; ToProc a pid or a registered name.
      if (!has(4)) return refuse("a short MONITOR_P");
      std::size_t a = s.offset();
      if (!s.skip()) return bad();
      in.from_raw = body.substr(a, s.offset() - a);
      a = s.offset();
      uint8_t tag = s.peek();
      bool is_atom = tag == ERL_ATOM_EXT || tag == ERL_SMALL_ATOM_EXT || tag == ERL_ATOM_UTF8_EXT ||
                     tag == ERL_SMALL_ATOM_UTF8_EXT;
      if (is_atom) {
        if (!s.atom(atom)) return bad();
        in.to_name = atom;
      } else {
        if (!s.pid(p)) return bad();
        in.to = from_scanned(me, p);
      }
      in.to_raw = body.substr(a, s.offset() - a);
      a = s.offset();
      if (!s.skip()) return bad();
      in.ref_raw = body.substr(a, s.offset() - a);
      return in;
    }
    default:
      return in;  // handled elsewhere or not yet (links, exits): the caller looks at op
  }
  // Anything left in the control tuple (a trace token) is skipped.
  for (uint32_t k = (op == ctl_reg_send || op == ctl_reg_send_tt) ? 4 : 3; k < arity; ++k)
    if (!s.skip()) return bad();
  in.payload = body.substr(s.offset());
  return in;
}

std::string frame_monitor_exit(std::string_view to_raw, std::string_view from_raw, std::string_view ref_raw,
                               std::string_view reason, bool payload) {
  xbuf c;
  ei_x_encode_version(&c.b);
  ei_x_encode_tuple_header(&c.b, payload ? 4 : 5);
  ei_x_encode_long(&c.b, payload ? long{ctl_payload_monitor_p_exit} : long{ctl_monitor_p_exit});
  std::string control(c.view());
  control += to_raw;
  control += from_raw;
  control += ref_raw;
  if (payload) control += '\x83';  // the reason is the payload: a term of its own
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
  etf_scanner s(payload, 0);
  uint32_t arity = 0;
  std::string atom;
  scanned_pid from;
  if (!s.version() || !s.tuple_header(arity) || arity != 3 || !s.atom(atom) || atom != "$gen_call" ||
      !s.tuple_header(arity) || arity != 2 || !s.pid(from))
    return {};
  std::size_t tag_start = s.offset();
  if (!s.skip()) return {};
  std::string_view tag = payload.substr(tag_start, s.offset() - tag_start);
  if (!s.tuple_header(arity) || arity != 2 || !s.atom(atom) || atom != "is_auth") return {};
  // {Tag, yes}, the tag copied as it came (OTP 25: [alias | Ref]).
  xbuf r;
  ei_x_encode_version(&r.b);
  ei_x_encode_tuple_header(&r.b, 2);
  std::string reply(r.view());
  reply += tag;
  xbuf yes;
  ei_x_encode_atom(&yes.b, "yes");
  reply += yes.view();
  return frame_send(me, herd::no_pid, from_scanned(me, from), reply, send_sender);
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
  // Any message reaches ping's guard: read with the bounded codec.
  auto t = herd::binary_to_term(payload);
  std::size_t at = 0;
  auto want = herd::decode_term(ref, at);
  return t && want && t->is_tuple() && t->size() == 2 && (*t)[0] == *want && (*t)[1].is_atom(herd::atom("yes"));
}

}  // namespace herd::dist::detail
