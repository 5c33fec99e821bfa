// Terms in Erlang syntax, as io:format's ~p would write them on one line:
// a binary or list of printable ASCII as <<"text">> or "text", the rest as ~w.
#include "term_node.hpp"

#include <herd/dist/term_codec.hpp>

#include <charconv>
#include <ostream>

namespace herd {
namespace {

using detail::term_access;

bool lower(char c) { return c >= 'a' && c <= 'z'; }
bool word_char(char c) { return lower(c) || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '@'; }

bool needs_quotes(std::string_view s) {
  static constexpr std::string_view reserved[] = {
      "after", "and", "andalso", "band", "begin", "bnot", "bor", "bsl", "bsr", "bxor", "case", "catch", "cond", "div",
      "end", "fun", "if", "let", "maybe", "not", "of", "or", "orelse", "receive", "rem", "try", "when", "xor"};
  if (s.empty() || !lower(s[0])) return true;
  for (char c : s)
    if (!word_char(c)) return true;
  for (auto r : reserved)
    if (s == r) return true;
  return false;
}

void escaped(std::string& out, std::string_view s, char quote) {
  for (char c : s) {
    if (c == quote || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x{%X}", unsigned(static_cast<unsigned char>(c)));
      out += buf;
    } else {
      out += c;
    }
  }
}

void print_atom(std::string& out, std::string_view s) {
  if (!needs_quotes(s)) {
    out += s;
    return;
  }
  out += '\'';
  escaped(out, s, '\'');
  out += '\'';
}

void print_float(std::string& out, double d) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  std::string s(buf, r.ptr);
  auto e = s.find('e');
  std::string mant = s.substr(0, e), exp = e == std::string::npos ? "" : s.substr(e + 1);
  if (mant.find('.') == std::string::npos) mant += ".0";
  out += mant;
  if (!exp.empty()) {
    out += 'e';
    if (exp[0] == '+') exp.erase(0, 1);
    out += exp;
  }
}

bool printable(int64_t c) { return c >= 0x20 && c < 0x7f; }

void print_node_name(std::string& out, atom node) {
  if (node.text() == "nonode@nohost") out += '0';
  else out += node.text();
}

void print(std::string& out, const term& t);

void print_fun(std::string& out, std::string_view enc) {
  std::size_t at = 1;
  if (!enc.empty() && uint8_t(enc[0]) == 113) {  // EXPORT_EXT: fun M:F/A
    auto m = decode_term(enc, at);
    auto f = m ? decode_term(enc, at) : m;
    if (m && f && m->is_atom() && f->is_atom() && at + 1 < enc.size()) {
      out += "fun ";
      print_atom(out, m->as_atom().text());
      out += ':';
      print_atom(out, f->as_atom().text());
      out += '/' + std::to_string(uint8_t(enc[at + 1]));
      return;
    }
  } else if (enc.size() > 30) {  // NEW_FUN_EXT: #Fun<Module.Index>
    at = 30;
    if (auto m = decode_term(enc, at); m && m->is_atom()) {
      uint32_t index = (uint32_t(uint8_t(enc[22])) << 24) | (uint32_t(uint8_t(enc[23])) << 16) |
                       (uint32_t(uint8_t(enc[24])) << 8) | uint8_t(enc[25]);
      out += "#Fun<" + std::string(m->as_atom().text()) + "." + std::to_string(index) + ">";
      return;
    }
  }
  out += "#Fun<?>";
}

// Leaves and the text forms: out of line, so that their locals do not
// enlarge the frame print() repeats once per level of nesting.
[[gnu::noinline]] void print_leaf(std::string& out, const term& t) {
  switch (t.type()) {
    case term::kind::integer:
      if (auto v = t.to_int64()) out += std::to_string(*v);
      else out += detail::big_to_decimal(t.negative(), term_access::as<detail::big_node>(t).mag);
      return;
    case term::kind::float_: print_float(out, t.as_double()); return;
    case term::kind::atom: print_atom(out, t.as_atom().text()); return;
    case term::kind::nil: out += "[]"; return;
    case term::kind::bitstring: {
      std::string_view b = t.bytes();
      std::size_t bits = t.bit_size();
      bool text = bits % 8 == 0 && !b.empty();
      for (char c : b) text = text && printable(c);
      out += "<<";
      if (text) {
        out += '"';
        escaped(out, b, '"');
        out += '"';
      } else {
        std::size_t whole = bits / 8;
        for (std::size_t i = 0; i < whole; ++i) {
          if (i) out += ',';
          out += std::to_string(uint8_t(b[i]));
        }
        if (unsigned rest = bits % 8) {
          if (whole) out += ',';
          out += std::to_string(uint8_t(b[whole]) >> (8 - rest)) + ":" + std::to_string(rest);
        }
      }
      out += ">>";
      return;
    }
    case term::kind::pid: {
      auto& p = t.as_pid();
      out += '<';
      print_node_name(out, p.node);
      out += '.' + std::to_string(p.id) + '.' + std::to_string(p.serial) + '>';
      return;
    }
    case term::kind::port: {
      auto& p = t.as_port();
      out += "#Port<";
      print_node_name(out, p.node);
      out += '.' + std::to_string(p.id) + '>';
      return;
    }
    case term::kind::reference: {
      auto& r = t.as_reference();
      out += "#Ref<";
      print_node_name(out, r.node);
      for (int i = r.len; i-- > 0;) out += '.' + std::to_string(r.ids[i]);
      out += '>';
      return;
    }
    case term::kind::fun: print_fun(out, t.fun_encoding()); return;
    default: return;
  }
}

// A proper list of printable ASCII as "text"; false if it is not one.
[[gnu::noinline]] bool print_text_list(std::string& out, const term& t) {
  auto es = t.elements();
  bool text = t.is_proper_list();
  for (const term& e : es) text = text && e.is_integer() && e.to_int64() && printable(*e.to_int64());
  if (!text) return false;
  out += '"';
  std::string s;
  for (const term& e : es) s += char(*e.to_int64());
  escaped(out, s, '"');
  out += '"';
  return true;
}

void print(std::string& out, const term& t) {
  switch (t.type()) {
    case term::kind::tuple: {
      out += '{';
      bool first = true;
      for (const term& e : t.elements()) {
        if (!first) out += ',';
        first = false;
        print(out, e);
      }
      out += '}';
      return;
    }
    case term::kind::list: {
      if (print_text_list(out, t)) return;
      auto es = t.elements();
      out += '[';
      for (std::size_t i = 0; i < es.size(); ++i) {
        if (i) out += ',';
        print(out, es[i]);
      }
      if (!t.tail().is_nil()) {
        out += '|';
        print(out, t.tail());
      }
      out += ']';
      return;
    }
    case term::kind::map: {
      auto& m = term_access::as<detail::map_node>(t);
      out += "#{";
      for (std::size_t i = 0; i < m.order.size(); ++i) {
        if (i) out += ',';
        print(out, m.pairs[m.order[i]].first);
        out += " => ";
        print(out, m.pairs[m.order[i]].second);
      }
      out += '}';
      return;
    }
    default: print_leaf(out, t); return;
  }
}

}  // namespace

std::string to_string(const term& t) {
  std::string out;
  print(out, t);
  return out;
}

std::ostream& operator<<(std::ostream& os, const term& t) { return os << to_string(t); }

}  // namespace herd
