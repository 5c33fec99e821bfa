// Small ETF helpers for the distribution tests, written with ei (herd::term
// is another branch's work): build {atom, ...} tuples and take {Pid, T} apart.
#pragma once
#include <herd/actors/pid.hpp>
#include <herd/dist/node.hpp>

#include <ei.h>

#include <string>

namespace herd::test {

inline std::string etf_atom(const char* a) {
  ei_x_buff b;
  ei_x_new_with_version(&b);
  ei_x_encode_atom(&b, a);
  std::string s(b.buff, std::size_t(b.index));
  ei_x_free(&b);
  return s;
}

inline void encode_pid(ei_x_buff* b, herd::pid p) {
  auto d = herd::dist::describe(p);
  erlang_pid e{};
  std::snprintf(e.node, sizeof e.node, "%s", d ? d->node.c_str() : "nonode@nohost");
  e.num = d ? d->id : 0;
  e.serial = d ? d->serial : 0;
  e.creation = d ? d->creation : 0;
  ei_x_encode_pid(b, &e);
}

// {Tag, Pid}
inline std::string etf_tagged_pid(const char* tag, herd::pid p) {
  ei_x_buff b;
  ei_x_new_with_version(&b);
  ei_x_encode_tuple_header(&b, 2);
  ei_x_encode_atom(&b, tag);
  encode_pid(&b, p);
  std::string s(b.buff, std::size_t(b.index));
  ei_x_free(&b);
  return s;
}

// {Pid, atom}
inline std::string etf_pid_atom(herd::pid p, const char* atom) {
  ei_x_buff b;
  ei_x_new_with_version(&b);
  ei_x_encode_tuple_header(&b, 2);
  encode_pid(&b, p);
  ei_x_encode_atom(&b, atom);
  std::string s(b.buff, std::size_t(b.index));
  ei_x_free(&b);
  return s;
}

// {From, T} -> From and T (as a whole term, with its 131). False otherwise.
inline bool split_from(const std::string& etf, herd::pid& from, std::string& term) {
  int i = 0, v = 0, arity = 0;
  erlang_pid p{};
  if (ei_decode_version(etf.data(), &i, &v) || ei_decode_tuple_header(etf.data(), &i, &arity) || arity != 2 ||
      ei_decode_pid(etf.data(), &i, &p))
    return false;
  from = herd::dist::intern(herd::dist::remote_pid{p.node, p.num, p.serial, p.creation});
  term = "\x83" + etf.substr(std::size_t(i));
  return true;
}

// The atom at the top of an ETF term, or "".
inline std::string atom_of(const std::string& etf) {
  int i = 0, v = 0;
  char a[MAXATOMLEN_UTF8];
  if (ei_decode_version(etf.data(), &i, &v) || ei_decode_atom(etf.data(), &i, a)) return {};
  return a;
}

}  // namespace herd::test
