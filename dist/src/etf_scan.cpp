#include "etf_scan.hpp"

#include "term_tags.hpp"

namespace herd::dist::detail {

namespace etf = herd::detail::etf;

uint32_t etf_scanner::u16() {
  uint32_t v = uint32_t(uint8_t(b_[at_])) << 8 | uint8_t(b_[at_ + 1]);
  at_ += 2;
  return v;
}

uint32_t etf_scanner::u32() {
  uint32_t hi = u16();
  return hi << 16 | u16();
}

bool etf_scanner::version() {
  if (!need(1)) return false;
  return u8() == etf::version || fail("no version byte (131)");
}

bool etf_scanner::tuple_header(uint32_t& arity) {
  if (!need(1)) return false;
  uint8_t tag = u8();
  if (tag == etf::small_tuple) {
    if (!need(1)) return false;
    arity = u8();
  } else if (tag == etf::large_tuple) {
    if (!need(4)) return false;
    arity = u32();
  } else {
    return fail("not a tuple");
  }
  // Each element takes a byte at least.
  return arity <= b_.size() - at_ || fail("a tuple longer than the bytes left");
}

bool etf_scanner::integer(int64_t& v) {
  if (!need(1)) return false;
  uint8_t tag = u8();
  if (tag == etf::small_integer) {
    if (!need(1)) return false;
    v = u8();
  } else if (tag == etf::integer) {
    if (!need(4)) return false;
    v = int32_t(u32());
  } else {
    return fail("not a small integer");
  }
  return true;
}

bool etf_scanner::atom(std::string& utf8) {
  if (!need(1)) return false;
  uint8_t tag = u8();
  std::size_t len = 0;
  if (tag == etf::small_atom_utf8 || tag == etf::small_atom_latin1) {
    if (!need(1)) return false;
    len = u8();
  } else if (tag == etf::atom_utf8 || tag == etf::atom_latin1) {
    if (!need(2)) return false;
    len = u16();
  } else {
    return fail("not an atom");
  }
  if (!need(len)) return false;
  std::string_view text = b_.substr(at_, len);
  at_ += len;
  utf8.clear();
  if (tag == etf::small_atom_utf8 || tag == etf::atom_utf8) {
    utf8.assign(text);
    return true;
  }
  for (char c : text) {  // latin-1 code points are the bytes' values
    auto u = uint8_t(c);
    if (u < 0x80) {
      utf8 += c;
    } else {
      utf8 += char(0xc0 | (u >> 6));
      utf8 += char(0x80 | (u & 0x3f));
    }
  }
  return true;
}

bool etf_scanner::pid(scanned_pid& p) {
  if (!need(1)) return false;
  uint8_t tag = u8();
  if (tag != etf::new_pid && tag != etf::pid) return fail("not a pid");
  if (!atom(p.node) || !need(tag == etf::new_pid ? 12 : 9)) return false;
  p.num = u32();
  p.serial = u32();
  p.creation = tag == etf::new_pid ? u32() : u8();
  return true;
}

bool etf_scanner::skip() {
  std::string scratch;
  // Terms still to pass. Every step consumes a byte at least, so the loop
  // ends within the input whatever counts a peer writes.
  uint64_t pending = 1;
  auto bytes = [&](std::size_t n) {
    if (!need(n)) return false;
    at_ += n;
    return true;
  };
  while (pending > 0) {
    if (!need(1)) return false;
    uint8_t tag = u8();
    --pending;
    bool good = true;
    switch (tag) {
      case etf::small_integer: good = bytes(1); break;
      case etf::integer: good = bytes(4); break;
      case etf::new_float: good = bytes(8); break;
      case etf::float_: good = bytes(31); break;
      case etf::nil: break;
      case etf::atom_latin1:
      case etf::atom_utf8:
      case etf::string: good = need(2) && bytes(u16()); break;
      case etf::small_atom_latin1:
      case etf::small_atom_utf8: good = need(1) && bytes(u8()); break;
      case etf::binary: good = need(4) && bytes(u32()); break;
      case etf::bit_binary: good = need(4) && bytes(std::size_t(u32()) + 1); break;
      case etf::small_big: good = need(1) && bytes(std::size_t(u8()) + 1); break;
      case etf::large_big: good = need(4) && bytes(std::size_t(u32()) + 1); break;
      case etf::small_tuple: good = need(1) && (pending += u8(), true); break;
      case etf::large_tuple: good = need(4) && (pending += u32(), true); break;
      case etf::list: good = need(4) && (pending += uint64_t(u32()) + 1, true); break;  // elements and tail
      case etf::map: good = need(4) && (pending += 2 * uint64_t(u32()), true); break;
      case etf::new_pid: good = atom(scratch) && bytes(12); break;
      case etf::pid: good = atom(scratch) && bytes(9); break;
      case etf::v4_port: good = atom(scratch) && bytes(12); break;
      case etf::new_port: good = atom(scratch) && bytes(8); break;
      case etf::port: good = atom(scratch) && bytes(5); break;
      case etf::reference: good = atom(scratch) && bytes(5); break;
      case etf::new_reference:
      case etf::newer_reference: {
        if (!need(2)) return false;
        std::size_t words = u16();
        good = atom(scratch) && bytes((tag == etf::newer_reference ? 4 : 1) + 4 * words);
        break;
      }
      case etf::export_: pending += 3; break;  // module, function, arity
      case etf::new_fun: {
        if (!need(4)) return false;
        uint32_t size = u32();  // counts its own 4 bytes
        good = (size >= 4 || fail("NEW_FUN_EXT shorter than its size field")) && bytes(size - 4);
        break;
      }
      case etf::fun_old: good = need(4) && (pending += 4 + uint64_t(u32()), true); break;  // pid, module, index, uniq, free
      default: return fail("a tag a control message cannot hold");
    }
    if (!good) return false;
  }
  return true;
}

}  // namespace herd::dist::detail
