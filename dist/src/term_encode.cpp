// Encoding: what OTP 26 writes by default (OTP 25 with {minor_version, 2}).
// Recursive, one frame per level of nesting; a decoded term's nesting is
// bounded by decode_options::max_depth.
#include "term_node.hpp"
#include "term_tags.hpp"

#include <herd/dist/term_codec.hpp>

#include <cstring>

namespace herd {
namespace {

using detail::term_access;
namespace etf = detail::etf;

void put8(std::string& o, uint8_t v) { o.push_back(char(v)); }
void put16(std::string& o, uint16_t v) {
  char b[2] = {char(v >> 8), char(v)};
  o.append(b, 2);
}
void put32(std::string& o, uint32_t v) {
  char b[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
  o.append(b, 4);
}

void put_atom(std::string& o, atom a) {
  std::string_view s = a.text();
  if (s.size() <= 255) {
    put8(o, etf::small_atom_utf8);
    put8(o, uint8_t(s.size()));
  } else {
    put8(o, etf::atom_utf8);
    put16(o, uint16_t(s.size()));
  }
  o.append(s);
}

void put_big(std::string& o, bool neg, const uint8_t* mag, std::size_t n) {
  if (n <= 255) {
    put8(o, etf::small_big);
    put8(o, uint8_t(n));
  } else {
    put8(o, etf::large_big);
    put32(o, uint32_t(n));
  }
  put8(o, neg ? 1 : 0);
  o.append(reinterpret_cast<const char*>(mag), n);
}

void put_small(std::string& o, int64_t v) {
  if (v >= 0 && v <= 255) {
    put8(o, etf::small_integer);
    put8(o, uint8_t(v));
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    put8(o, etf::integer);
    put32(o, uint32_t(int32_t(v)));
  } else {
    uint64_t u = v < 0 ? 0 - uint64_t(v) : uint64_t(v);
    uint8_t mag[8];
    std::size_t n = 0;
    for (; u; u >>= 8) mag[n++] = uint8_t(u);
    put_big(o, v < 0, mag, n);
  }
}

// A proper list of 1..65535 integers 0..255: STRING_EXT, as BEAM writes it.
bool byte_string(const term& t) {
  if (!t.is_proper_list()) return false;
  auto es = t.elements();
  if (es.empty() || es.size() > 65535) return false;
  for (const term& e : es) {
    if (term_access::rep_of(e) != term_access::rep::small) return false;
    int64_t v = term_access::small(e);
    if (v < 0 || v > 255) return false;
  }
  return true;
}

void encode(const term& t, std::string& o) {
  using rep = term_access::rep;
  switch (term_access::rep_of(t)) {
    case rep::small: put_small(o, term_access::small(t)); return;
    case rep::big: {
      auto& b = term_access::as<detail::big_node>(t);
      put_big(o, b.neg, b.mag.data(), b.mag.size());
      return;
    }
    case rep::flt: {
      uint64_t bits;
      double d = term_access::flt(t);
      std::memcpy(&bits, &d, 8);
      put8(o, etf::new_float);
      put32(o, uint32_t(bits >> 32));
      put32(o, uint32_t(bits));
      return;
    }
    case rep::atom: put_atom(o, t.as_atom()); return;
    case rep::nil: put8(o, etf::nil); return;
    case rep::tuple: {
      auto es = t.elements();
      if (es.size() <= 255) {
        put8(o, etf::small_tuple);
        put8(o, uint8_t(es.size()));
      } else {
        put8(o, etf::large_tuple);
        put32(o, uint32_t(es.size()));
      }
      for (const term& e : es) encode(e, o);
      return;
    }
    case rep::list: {
      auto es = t.elements();
      if (byte_string(t)) {
        put8(o, etf::string);
        put16(o, uint16_t(es.size()));
        for (const term& e : es) put8(o, uint8_t(term_access::small(e)));
        return;
      }
      put8(o, etf::list);
      put32(o, uint32_t(es.size()));
      for (const term& e : es) encode(e, o);
      encode(t.tail(), o);
      return;
    }
    case rep::map: {
      auto ps = t.pairs();
      put8(o, etf::map);
      put32(o, uint32_t(ps.size()));
      for (auto& [k, v] : ps) {
        encode(k, o);
        encode(v, o);
      }
      return;
    }
    case rep::bits: {
      auto& b = term_access::as<detail::bits_node>(t);
      if (b.last_bits == 8) {
        put8(o, etf::binary);
        put32(o, uint32_t(b.bytes.size()));
      } else {
        put8(o, etf::bit_binary);
        put32(o, uint32_t(b.bytes.size()));
        put8(o, b.last_bits);
      }
      o.append(b.bytes);
      return;
    }
    case rep::pid: {
      auto& p = t.as_pid();
      put8(o, etf::new_pid);
      put_atom(o, p.node);
      put32(o, p.id);
      put32(o, p.serial);
      put32(o, p.creation);
      return;
    }
    case rep::port: {
      auto& p = t.as_port();
      if (p.id <= UINT32_MAX) {
        put8(o, etf::new_port);
        put_atom(o, p.node);
        put32(o, uint32_t(p.id));
      } else {
        put8(o, etf::v4_port);
        put_atom(o, p.node);
        put32(o, uint32_t(p.id >> 32));
        put32(o, uint32_t(p.id));
      }
      put32(o, p.creation);
      return;
    }
    case rep::ref: {
      auto& r = t.as_reference();
      put8(o, etf::newer_reference);
      put16(o, r.len);
      put_atom(o, r.node);
      put32(o, r.creation);
      for (uint32_t w : r.words()) put32(o, w);
      return;
    }
    case rep::fun: o.append(t.fun_encoding()); return;
  }
}

}  // namespace

void encode_term(const term& t, std::string& out) { encode(t, out); }

std::string term_to_binary(const term& t) {
  std::string out;
  out.reserve(64);
  out.push_back(char(etf::version));
  encode(t, out);
  return out;
}

term term::export_fun(atom module, atom function, uint8_t arity) {
  std::string enc;
  put8(enc, etf::export_);
  put_atom(enc, module);
  put_atom(enc, function);
  put8(enc, etf::small_integer);
  put8(enc, arity);
  auto* n = new detail::fun_node;
  n->enc = std::move(enc);
  return term_access::adopt(rep::fun, n);
}

}  // namespace herd
