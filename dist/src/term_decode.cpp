// Decoding untrusted bytes. Iterative: containers being filled wait on an
// explicit stack (bounded by max_depth), so a hostile nesting costs heap in
// proportion to the input, never machine stack. Every length is checked
// against the bytes left before anything is reserved: an element takes at
// least one byte, so a tuple of N elements needs N bytes to follow.
#include "term_node.hpp"
#include "term_tags.hpp"

#include <herd/dist/term_codec.hpp>

#include <charconv>
#include <cmath>
#include <cstring>
#include <zlib.h>

namespace herd {
namespace {

using detail::term_access;
namespace etf = detail::etf;
using rep = term_access::rep;

class decoder {
 public:
  decoder(const uint8_t* b, std::size_t n, std::size_t pos, const decode_options& o) : b_(b), n_(n), pos_(pos), o_(o) {}

  bool run(term& out);
  std::size_t pos() const { return pos_; }
  term_error& error() { return err_; }

 private:
  struct frame {
    uint8_t tag;
    uint32_t left;
    std::size_t at;
    std::vector<term> items;
  };

  bool fail(term_errc c, std::size_t at, std::string detail) {
    err_ = term_error{c, at, std::move(detail)};
    return false;
  }
  std::size_t left() const { return n_ - pos_; }
  bool need(std::size_t k, std::size_t at, const char* what) {
    if (k <= left()) return true;
    return fail(term_errc::truncated, at,
                std::string(what) + " needs " + std::to_string(k) + " bytes, " + std::to_string(left()) + " left");
  }
  uint8_t u8() { return b_[pos_++]; }
  uint16_t u16() {
    uint16_t v = uint16_t((b_[pos_] << 8) | b_[pos_ + 1]);
    pos_ += 2;
    return v;
  }
  uint32_t u32() {
    uint32_t v = (uint32_t(b_[pos_]) << 24) | (uint32_t(b_[pos_ + 1]) << 16) | (uint32_t(b_[pos_ + 2]) << 8) | b_[pos_ + 3];
    pos_ += 4;
    return v;
  }
  bool read_atom(atom& a);
  bool scalar(uint8_t tag, std::size_t at, term& v);
  bool build(frame& f, term& v);

  const uint8_t* b_;
  std::size_t n_;
  std::size_t pos_;
  const decode_options& o_;
  term_error err_{term_errc::truncated};
};

bool decoder::read_atom(atom& a) {
  std::size_t at = pos_;
  if (!need(1, at, "an atom")) return false;
  uint8_t tag = u8();
  std::size_t len;
  bool latin1 = tag == etf::atom_latin1 || tag == etf::small_atom_latin1;
  if (tag == etf::small_atom_utf8 || tag == etf::small_atom_latin1) {
    if (!need(1, at, "an atom's length")) return false;
    len = u8();
  } else if (tag == etf::atom_utf8 || tag == etf::atom_latin1) {
    if (!need(2, at, "an atom's length")) return false;
    len = u16();
  } else if (tag == etf::atom_cache_ref) {
    return fail(term_errc::unknown_tag, at, "ATOM_CACHE_REF outside a distribution header");
  } else {
    return fail(term_errc::unknown_tag, at, "tag " + std::to_string(tag) + " where an atom belongs");
  }
  if (!need(len, at, "an atom's text")) return false;
  auto* p = reinterpret_cast<const char*>(b_ + pos_);
  pos_ += len;
  term_result<atom> r = latin1 ? term_result<atom>(term_error{term_errc::bad_atom}) : atom::make({p, len});
  if (latin1) {
    if (len > 255) return fail(term_errc::bad_atom, at, std::to_string(len) + " characters (at most 255)");
    std::string u;
    for (std::size_t i = 0; i < len; ++i) {
      auto c = static_cast<unsigned char>(p[i]);
      if (c < 0x80) {
        u += char(c);
      } else {
        u += char(0xC0 | (c >> 6));
        u += char(0x80 | (c & 0x3F));
      }
    }
    r = atom::make(u);
  }
  if (!r) return fail(r.error().code, at, r.error().detail);
  a = *r;
  return true;
}

bool decoder::scalar(uint8_t tag, std::size_t at, term& v) {
  switch (tag) {
    case etf::small_integer:
      if (!need(1, at, "SMALL_INTEGER_EXT")) return false;
      v = term(int64_t(u8()));
      return true;
    case etf::integer:
      if (!need(4, at, "INTEGER_EXT")) return false;
      v = term(int64_t(int32_t(u32())));
      return true;
    case etf::small_big:
    case etf::large_big: {
      std::size_t len;
      if (tag == etf::small_big) {
        if (!need(2, at, "SMALL_BIG_EXT")) return false;
        len = u8();
      } else {
        if (!need(5, at, "LARGE_BIG_EXT")) return false;
        len = u32();
      }
      uint8_t sign = u8();
      if (sign > 1) return fail(term_errc::bad_value, at, "a bignum's sign byte is " + std::to_string(sign));
      if (!need(len, at, "a bignum's digits")) return false;
      v = term_access::make_integer(sign == 1, std::vector<uint8_t>(b_ + pos_, b_ + pos_ + len));
      pos_ += len;
      return true;
    }
    case etf::new_float: {
      if (!need(8, at, "NEW_FLOAT_EXT")) return false;
      uint64_t bits = uint64_t(u32()) << 32;
      bits |= u32();
      double d;
      std::memcpy(&d, &bits, 8);
      if (!std::isfinite(d)) return fail(term_errc::bad_value, at, "a NaN or infinite float");
      v = term(d);
      return true;
    }
    case etf::float_: {
      if (!need(31, at, "FLOAT_EXT")) return false;
      auto* p = reinterpret_cast<const char*>(b_ + pos_);
      pos_ += 31;
      std::size_t len = strnlen(p, 31);
      std::string_view s(p, len);
      while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
      if (!s.empty() && s.front() == '+') s.remove_prefix(1);
      double d = 0;
      auto r = std::from_chars(s.data(), s.data() + s.size(), d);
      if (r.ec != std::errc() || r.ptr != s.data() + s.size() || !std::isfinite(d))
        return fail(term_errc::bad_value, at, "FLOAT_EXT text is not a finite float");
      v = term(d);
      return true;
    }
    case etf::atom_latin1:
    case etf::small_atom_latin1:
    case etf::atom_utf8:
    case etf::small_atom_utf8: {
      atom a;
      pos_ = at;
      if (!read_atom(a)) return false;
      v = term(a);
      return true;
    }
    case etf::nil: v = term(); return true;
    case etf::string: {
      if (!need(2, at, "STRING_EXT")) return false;
      std::size_t len = u16();
      if (!need(len, at, "STRING_EXT's bytes")) return false;
      std::vector<term> es;
      es.reserve(len);
      for (std::size_t i = 0; i < len; ++i) es.emplace_back(int64_t(b_[pos_ + i]));
      pos_ += len;
      v = term::list(std::move(es));
      return true;
    }
    case etf::binary: {
      if (!need(4, at, "BINARY_EXT")) return false;
      std::size_t len = u32();
      if (!need(len, at, "BINARY_EXT's bytes")) return false;
      v = term::binary(std::string_view(reinterpret_cast<const char*>(b_ + pos_), len));
      pos_ += len;
      return true;
    }
    case etf::bit_binary: {
      if (!need(5, at, "BIT_BINARY_EXT")) return false;
      std::size_t len = u32();
      unsigned bits = u8();
      if ((bits == 0) != (len == 0) || bits > 8)
        return fail(term_errc::bad_value, at, "BIT_BINARY_EXT of " + std::to_string(len) + " bytes with " + std::to_string(bits) + " bits in the last");
      if (!need(len, at, "BIT_BINARY_EXT's bytes")) return false;
      v = term::bitstring(std::string_view(reinterpret_cast<const char*>(b_ + pos_), len), len ? bits : 8);
      pos_ += len;
      return true;
    }
    case etf::new_pid:
    case etf::pid: {
      erl_pid p;
      if (!read_atom(p.node)) return false;
      if (!need(tag == etf::new_pid ? 12 : 9, at, "a pid")) return false;
      p.id = u32();
      p.serial = u32();
      p.creation = tag == etf::new_pid ? u32() : u8();
      v = term::pid(p);
      return true;
    }
    case etf::new_port:
    case etf::port:
    case etf::v4_port: {
      erl_port p;
      if (!read_atom(p.node)) return false;
      if (!need(tag == etf::v4_port ? 12 : tag == etf::new_port ? 8 : 5, at, "a port")) return false;
      p.id = tag == etf::v4_port ? (uint64_t(u32()) << 32) : 0;
      p.id |= u32();
      p.creation = tag == etf::port ? u8() : u32();
      v = term::port(p);
      return true;
    }
    case etf::newer_reference:
    case etf::new_reference:
    case etf::reference: {
      erl_ref r;
      std::size_t len = 1;
      if (tag != etf::reference) {
        if (!need(2, at, "a reference")) return false;
        len = u16();
      }
      if (len < 1 || len > 5) return fail(term_errc::bad_value, at, "a reference of " + std::to_string(len) + " words (1 to 5)");
      if (!read_atom(r.node)) return false;
      std::size_t creation = tag == etf::newer_reference ? 4 : 1;
      if (!need(creation + 4 * len, at, "a reference")) return false;
      if (tag != etf::reference) r.creation = creation == 4 ? u32() : u8();
      r.len = uint8_t(len);
      for (std::size_t i = 0; i < len; ++i) r.ids[i] = u32();
      if (tag == etf::reference) r.creation = u8();
      v = term::reference(r);
      return true;
    }
    case etf::new_fun: {
      if (!need(4, at, "NEW_FUN_EXT")) return false;
      std::size_t size = u32();  // counts itself
      if (size < 4 + 1 + 16 + 4 + 4) return fail(term_errc::bad_value, at, "NEW_FUN_EXT of " + std::to_string(size) + " bytes");
      if (!need(size - 4, at, "NEW_FUN_EXT's body")) return false;
      pos_ += size - 4;
      auto* n = new detail::fun_node;
      n->enc.assign(reinterpret_cast<const char*>(b_ + at), pos_ - at);
      v = term_access::adopt(rep::fun, n);
      return true;
    }
    case etf::export_: {
      atom m, f;
      if (!read_atom(m) || !read_atom(f)) return false;
      if (!need(2, at, "EXPORT_EXT's arity")) return false;
      if (u8() != etf::small_integer) return fail(term_errc::bad_value, at, "EXPORT_EXT's arity is not a SMALL_INTEGER_EXT");
      u8();
      auto* n = new detail::fun_node;
      n->enc.assign(reinterpret_cast<const char*>(b_ + at), pos_ - at);
      v = term_access::adopt(rep::fun, n);
      return true;
    }
    case etf::compressed: return fail(term_errc::unknown_tag, at, "COMPRESSED inside a term");
    case etf::atom_cache_ref: return fail(term_errc::unknown_tag, at, "ATOM_CACHE_REF outside a distribution header");
    case etf::fun_old: return fail(term_errc::unknown_tag, at, "FUN_EXT (no longer sent since OTP 23)");
    case etf::local: return fail(term_errc::unknown_tag, at, "LOCAL_EXT (only the node that wrote it can read it)");
    default: return fail(term_errc::unknown_tag, at, "tag " + std::to_string(tag));
  }
}

bool decoder::build(frame& f, term& v) {
  if (f.tag == etf::small_tuple || f.tag == etf::large_tuple) {
    v = term::tuple(std::move(f.items));
  } else if (f.tag == etf::list) {
    term tail = std::move(f.items.back());
    f.items.pop_back();
    v = term::list(std::move(f.items), std::move(tail));
  } else {
    std::vector<std::pair<term, term>> ps;
    ps.reserve(f.items.size() / 2);
    for (std::size_t i = 0; i < f.items.size(); i += 2) ps.emplace_back(std::move(f.items[i]), std::move(f.items[i + 1]));
    v = term_access::make_map_unique(std::move(ps));
    if (term_access::has_duplicate_key(term_access::as<detail::map_node>(v)))
      return fail(term_errc::duplicate_key, f.at, "a map with a key twice");
  }
  return true;
}

bool decoder::run(term& out) {
  std::vector<frame> stack;
  term v;
  for (;;) {
    std::size_t at = pos_;
    if (!need(1, at, "a term")) return false;
    uint8_t tag = u8();
    std::size_t count = 0;  // items a container holds (a list: its tail too)
    bool container = true;
    if (tag == etf::small_tuple) {
      if (!need(1, at, "SMALL_TUPLE_EXT")) return false;
      count = u8();
    } else if (tag == etf::large_tuple) {
      if (!need(4, at, "LARGE_TUPLE_EXT")) return false;
      count = u32();
    } else if (tag == etf::list) {
      if (!need(4, at, "LIST_EXT")) return false;
      count = std::size_t(u32()) + 1;
    } else if (tag == etf::map) {
      if (!need(4, at, "MAP_EXT")) return false;
      count = std::size_t(u32()) * 2;
    } else {
      container = false;
      if (!scalar(tag, at, v)) return false;
    }
    if (container) {
      if (count > left())
        return fail(term_errc::truncated, at,
                    "tag " + std::to_string(tag) + " with " + std::to_string(count) + " items, " + std::to_string(left()) + " bytes left");
      if (count == 0) {
        v = tag == etf::map ? term_access::make_map_unique({}) : term::tuple(std::vector<term>{});
      } else {
        if (stack.size() >= o_.max_depth)
          return fail(term_errc::too_deep, at, "nesting deeper than " + std::to_string(o_.max_depth));
        stack.push_back(frame{tag, uint32_t(count), at, {}});
        stack.back().items.reserve(count);
        continue;
      }
    }
    // v is complete: it fills its container, which may complete in turn.
    for (;;) {
      if (stack.empty()) {
        out = std::move(v);
        return true;
      }
      frame& f = stack.back();
      f.items.push_back(std::move(v));
      if (--f.left > 0) break;
      if (!build(f, v)) return false;
      stack.pop_back();
    }
  }
}

term_result<term> inflate_and_decode(const uint8_t* b, std::size_t n, std::size_t& pos, const decode_options& o) {
  std::size_t at = pos;
  if (n - pos < 5) return term_error{term_errc::truncated, at, "COMPRESSED needs 5 bytes"};
  std::size_t size = (uint32_t(b[pos + 1]) << 24) | (uint32_t(b[pos + 2]) << 16) | (uint32_t(b[pos + 3]) << 8) | b[pos + 4];
  const uint8_t* z = b + pos + 5;
  std::size_t zlen = n - pos - 5;
  if (zlen == 0) return term_error{term_errc::truncated, at, "COMPRESSED without its zlib stream"};
  // zlib expands at most ~1032:1; a claim past that cannot be true.
  if (size > o.max_size || size > zlen * 1032 + 64)
    return term_error{term_errc::too_large, at, "COMPRESSED claims " + std::to_string(size) + " bytes from " + std::to_string(zlen)};
  std::string raw(size, '\0');
  z_stream s{};
  if (inflateInit(&s) != Z_OK) return term_error{term_errc::zlib, at, "inflateInit failed"};
  s.next_in = const_cast<Bytef*>(z);
  s.avail_in = uInt(std::min<std::size_t>(zlen, UINT32_MAX));
  s.next_out = reinterpret_cast<Bytef*>(raw.data());
  s.avail_out = uInt(size);
  int rc = inflate(&s, Z_FINISH);
  std::size_t produced = size - s.avail_out, consumed = zlen - s.avail_in;
  inflateEnd(&s);
  if (rc != Z_STREAM_END || produced != size)
    return term_error{term_errc::zlib, at, "COMPRESSED does not inflate to its " + std::to_string(size) + " bytes"};
  decoder d(reinterpret_cast<const uint8_t*>(raw.data()), raw.size(), 0, o);
  term t;
  if (!d.run(t)) {
    term_error e = std::move(d.error());
    e.detail += " (at byte " + std::to_string(e.offset) + " of the inflated term)";
    e.offset = at;
    return e;
  }
  if (d.pos() != raw.size()) return term_error{term_errc::trailing_bytes, at, "bytes after the inflated term"};
  pos += 5 + consumed;
  return t;
}

}  // namespace

term_result<term> decode_term(std::string_view bytes, std::size_t& offset, const decode_options& opts) {
  auto* b = reinterpret_cast<const uint8_t*>(bytes.data());
  if (offset > bytes.size()) return term_error{term_errc::truncated, offset, "offset past the end"};
  if (offset < bytes.size() && b[offset] == etf::compressed) return inflate_and_decode(b, bytes.size(), offset, opts);
  decoder d(b, bytes.size(), offset, opts);
  term t;
  if (!d.run(t)) return std::move(d.error());
  offset = d.pos();
  return t;
}

term_result<term> binary_to_term(std::string_view bytes, const decode_options& opts) {
  if (bytes.empty()) return term_error{term_errc::truncated, 0, "no version byte"};
  if (uint8_t(bytes[0]) != etf::version)
    return term_error{term_errc::bad_version, 0, "first byte " + std::to_string(uint8_t(bytes[0])) + ", not 131"};
  std::size_t at = 1;
  auto t = decode_term(bytes, at, opts);
  if (t && at != bytes.size())
    return term_error{term_errc::trailing_bytes, at, std::to_string(bytes.size() - at) + " bytes after the term"};
  return t;
}

term term::fun_bytes(std::string_view encoded) {
  std::size_t at = 0;
  auto t = decode_term(encoded, at);
  if (!t || !t->is_fun() || at != encoded.size())
    throw std::invalid_argument("herd::term::fun_bytes: not one NEW_FUN_EXT or EXPORT_EXT");
  return *t;
}

const char* to_string(term_errc c) noexcept {
  switch (c) {
    case term_errc::truncated: return "truncated";
    case term_errc::bad_version: return "bad_version";
    case term_errc::unknown_tag: return "unknown_tag";
    case term_errc::bad_atom: return "bad_atom";
    case term_errc::atom_table_full: return "atom_table_full";
    case term_errc::bad_value: return "bad_value";
    case term_errc::duplicate_key: return "duplicate_key";
    case term_errc::too_deep: return "too_deep";
    case term_errc::too_large: return "too_large";
    case term_errc::zlib: return "zlib";
    case term_errc::trailing_bytes: return "trailing_bytes";
    case term_errc::mismatch: return "mismatch";
  }
  return "unknown";
}

std::string term_error::message() const {
  std::string m = to_string(code);
  if (code != term_errc::mismatch) m += " at byte " + std::to_string(offset);
  if (!detail.empty()) m += ": " + detail;
  return m;
}

}  // namespace herd
