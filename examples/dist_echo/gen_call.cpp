#include "gen_call.hpp"

#include <herd/dist/node.hpp>

#include <ei.h>

#include <cstring>

namespace dist_echo {

namespace {

herd::pid pid_of(const erlang_pid& p) {
  return herd::dist::intern(herd::dist::remote_pid{p.node, p.num, p.serial, p.creation});
}

// [start, end) of the term at *i, moving *i past it.
bool span(const char* b, int* i, std::string& out) {
  int start = *i;
  if (ei_skip_term(b, i)) return false;
  out.assign(b + start, std::size_t(*i - start));
  return true;
}

std::string without_header(ei_x_buff& x, int from) {
  std::string s(x.buff + from, std::size_t(x.index - from));
  ei_x_free(&x);
  return s;
}

}  // namespace

std::optional<gen_call> parse_gen_call(const std::string& etf) {
  const char* b = etf.data();
  int i = 0, v = 0, arity = 0;
  char atom[MAXATOMLEN_UTF8];
  erlang_pid p{};
  gen_call c;
  if (ei_decode_version(b, &i, &v) || ei_decode_tuple_header(b, &i, &arity) || arity != 3 ||
      ei_decode_atom(b, &i, atom) || std::strcmp(atom, "$gen_call") != 0 ||
      ei_decode_tuple_header(b, &i, &arity) || arity != 2 || ei_decode_pid(b, &i, &p) || !span(b, &i, c.tag) ||
      !span(b, &i, c.request))
    return std::nullopt;
  c.from = pid_of(p);
  return c;
}

std::optional<std::pair<herd::pid, std::string>> parse_from_pair(const std::string& etf) {
  const char* b = etf.data();
  int i = 0, v = 0, arity = 0;
  erlang_pid p{};
  if (ei_decode_version(b, &i, &v) || ei_decode_tuple_header(b, &i, &arity) || arity != 2 ||
      ei_decode_pid(b, &i, &p))
    return std::nullopt;
  return std::pair{pid_of(p), "\x83" + etf.substr(std::size_t(i))};
}

std::string reply(const gen_call& c, const std::string& reply_term) {
  ei_x_buff x;
  ei_x_new_with_version(&x);
  ei_x_encode_tuple_header(&x, 2);
  std::string out(x.buff, std::size_t(x.index));
  ei_x_free(&x);
  return out + c.tag + reply_term;
}

std::string atom_term(const char* a) {
  ei_x_buff x;
  ei_x_new(&x);
  ei_x_encode_atom(&x, a);
  return without_header(x, 0);
}

std::string integer_term(long long v) {
  ei_x_buff x;
  ei_x_new(&x);
  ei_x_encode_longlong(&x, v);
  return without_header(x, 0);
}

std::string request_atom(const std::string& term) {
  int i = 0;
  char a[MAXATOMLEN_UTF8];
  if (ei_decode_atom(term.data(), &i, a)) return {};
  return a;
}

}  // namespace dist_echo
