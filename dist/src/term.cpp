// herd::term's life cycle and readers. Destruction is iterative: a term
// nested a million deep (a received one is bounded by decode's max_depth,
// a built one is not) must not overflow a 64 KiB actor stack when freed.
#include "term_node.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

namespace herd {

using detail::term_access;
using detail::term_node;

namespace {

using rep = term_access::rep;

void delete_node(rep r, term_node* n) noexcept {
  switch (r) {
    case rep::big: delete static_cast<detail::big_node*>(n); break;
    case rep::tuple: delete static_cast<detail::tuple_node*>(n); break;
    case rep::list: delete static_cast<detail::list_node*>(n); break;
    case rep::map: delete static_cast<detail::map_node*>(n); break;
    case rep::bits: delete static_cast<detail::bits_node*>(n); break;
    case rep::pid: delete static_cast<detail::pid_node*>(n); break;
    case rep::port: delete static_cast<detail::port_node*>(n); break;
    case rep::ref: delete static_cast<detail::ref_node*>(n); break;
    case rep::fun: delete static_cast<detail::fun_node*>(n); break;
    default: break;
  }
}

[[noreturn]] void bad_access(const char* want, const term& t) {
  throw bad_term_access(std::string("herd::term: not ") + want + ": " + to_string(t));
}

}  // namespace

term::term(const term& o) noexcept : rep_(o.rep_), aux_(o.aux_), u_(o.u_) {
  if (heap()) u_.p->refs.fetch_add(1, std::memory_order_relaxed);
}

term& term::operator=(const term& o) noexcept {
  if (this != &o) {
    term copy(o);
    *this = std::move(copy);
  }
  return *this;
}

term& term::operator=(term&& o) noexcept {
  if (this != &o) {
    term old(std::move(*this));  // freed at the end of scope
    rep_ = o.rep_;
    aux_ = o.aux_;
    u_ = o.u_;
    o.rep_ = rep::nil;
  }
  return *this;
}

term::~term() {
  if (!heap() || u_.p->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (rep_ != rep::tuple && rep_ != rep::list && rep_ != rep::map) {
    delete_node(rep_, u_.p);  // no children: no work list
    return;
  }
  // This was the last reference. Free the node; children whose last
  // reference it held go on a work list instead of recursing.
  std::vector<std::pair<rep, term_node*>> work;
  work.emplace_back(rep_, u_.p);
  auto take = [&work](term& child) {
    if (child.heap() && child.u_.p->refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
      work.emplace_back(child.rep_, child.u_.p);
    child.rep_ = rep::nil;  // released above: its destructor must not do it again
  };
  while (!work.empty()) {
    auto [r, n] = work.back();
    work.pop_back();
    if (r == rep::tuple) {
      for (auto& e : static_cast<detail::tuple_node*>(n)->elems) take(e);
    } else if (r == rep::list) {
      auto* l = static_cast<detail::list_node*>(n);
      for (auto& e : l->elems) take(e);
      take(l->tail);
    } else if (r == rep::map) {
      for (auto& [k, v] : static_cast<detail::map_node*>(n)->pairs) {
        take(k);
        take(v);
      }
    }
    delete_node(r, n);
  }
}

term::term(double d) : rep_(rep::flt) {
  if (!std::isfinite(d)) throw std::invalid_argument("herd::term: Erlang has no NaN or infinite floats");
  u_.d = d;
}

term term::from_u64(uint64_t v) {
  std::vector<uint8_t> mag;
  for (; v; v >>= 8) mag.push_back(uint8_t(v));
  return term_access::make_integer(false, std::move(mag));
}

term detail::term_access::make_integer(bool neg, std::vector<uint8_t> mag) {
  while (!mag.empty() && mag.back() == 0) mag.pop_back();
  if (mag.size() <= 8) {
    uint64_t u = 0;
    for (std::size_t i = mag.size(); i-- > 0;) u = (u << 8) | mag[i];
    if (!neg && u <= uint64_t(INT64_MAX)) return term(int64_t(u));
    if (neg && u <= uint64_t(INT64_MAX) + 1) return term(int64_t(0 - u));
  }
  auto* n = new big_node;
  n->neg = neg;
  n->mag = std::move(mag);
  return term_access::adopt(rep::big, n);
}

term term::integer(bool negative, std::span<const uint8_t> magnitude_le) {
  return term_access::make_integer(negative, std::vector<uint8_t>(magnitude_le.begin(), magnitude_le.end()));
}

term term::tuple(std::vector<term> elems) {
  if (elems.empty()) {
    term t;
    t.rep_ = rep::tuple;
    t.u_.p = nullptr;
    return t;
  }
  auto* n = new detail::tuple_node;
  n->elems = std::move(elems);
  return term_access::adopt(rep::tuple, n);
}

term term::list(std::vector<term> elems, term tail) {
  if (tail.rep_ == rep::list) {
    auto& l = term_access::as<detail::list_node>(tail);
    elems.insert(elems.end(), l.elems.begin(), l.elems.end());
    term rest = l.tail;
    tail = std::move(rest);
  }
  if (elems.empty()) return tail;
  auto* n = new detail::list_node;
  n->elems = std::move(elems);
  n->tail = std::move(tail);
  return term_access::adopt(rep::list, n);
}

term detail::term_access::make_map_unique(std::vector<std::pair<term, term>> pairs) {
  auto* n = new map_node;
  n->pairs = std::move(pairs);
  n->order.resize(n->pairs.size());
  for (uint32_t i = 0; i < n->order.size(); ++i) n->order[i] = i;
  std::sort(n->order.begin(), n->order.end(),
            [n](uint32_t a, uint32_t b) { return detail::key_less(n->pairs[a].first, n->pairs[b].first); });
  return term_access::adopt(rep::map, n);
}

bool detail::term_access::has_duplicate_key(const map_node& m) noexcept {
  for (std::size_t i = 1; i < m.order.size(); ++i)
    if (m.pairs[m.order[i - 1]].first == m.pairs[m.order[i]].first) return true;
  return false;
}

term term::map(std::vector<std::pair<term, term>> pairs) {
  // Pairs in key order, as BEAM keeps a map of up to 32 keys (so such a map
  // encodes to BEAM's bytes); of a key given twice, the later value.
  std::vector<uint32_t> idx(pairs.size());
  for (uint32_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) { return detail::key_less(pairs[a].first, pairs[b].first); });
  std::vector<std::pair<term, term>> out;
  out.reserve(pairs.size());
  for (std::size_t i = 0; i < idx.size();) {
    std::size_t j = i;
    while (j + 1 < idx.size() && pairs[idx[j + 1]].first == pairs[idx[i]].first) ++j;
    out.emplace_back(std::move(pairs[idx[i]].first), std::move(pairs[idx[j]].second));
    i = j + 1;
  }
  return term_access::make_map_unique(std::move(out));
}

term term::binary(std::string_view bytes) { return bitstring(bytes.empty() ? std::string_view() : bytes, 8); }
term term::binary(std::span<const uint8_t> bytes) {
  return binary(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

term term::bitstring(std::string_view bytes, unsigned last_bits) {
  if (last_bits < 1 || last_bits > 8) throw std::invalid_argument("herd::term::bitstring: last_bits must be 1..8");
  if (bytes.empty() && last_bits != 8) throw std::invalid_argument("herd::term::bitstring: no byte to hold the bits");
  auto* n = new detail::bits_node;
  n->bytes.assign(bytes);
  n->last_bits = uint8_t(last_bits);
  if (last_bits < 8) n->bytes.back() = char(uint8_t(n->bytes.back()) & uint8_t(0xFF << (8 - last_bits)));
  return term_access::adopt(rep::bits, n);
}

term term::string(std::string_view utf8) {
  if (detail::utf8_code_points(utf8) < 0) throw std::invalid_argument("herd::term::string: not UTF-8");
  std::vector<term> cps;
  for (std::size_t i = 0; i < utf8.size();) {
    auto c = static_cast<unsigned char>(utf8[i]);
    int len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
    uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(utf8[i + k]) & 0x3F);
    cps.emplace_back(int64_t(cp));
    i += len;
  }
  return list(std::move(cps));
}

namespace detail {
namespace {
thread_local uint32_t tls_pid_origin = 0;
}
pid_origin_scope::pid_origin_scope(uint32_t origin) noexcept : prev_(std::exchange(tls_pid_origin, origin)) {}
pid_origin_scope::~pid_origin_scope() { tls_pid_origin = prev_; }
uint32_t pid_origin_of(const term& t) noexcept {
  return t.is_pid() ? term_access::as<pid_node>(t).origin : 0;
}
}  // namespace detail

term term::pid(const erl_pid& p) {
  auto* n = new detail::pid_node;
  n->v = p;
  n->origin = detail::tls_pid_origin;
  return term_access::adopt(rep::pid, n);
}
term term::port(const erl_port& p) {
  auto* n = new detail::port_node;
  n->v = p;
  return term_access::adopt(rep::port, n);
}
term term::reference(const erl_ref& r) {
  if (r.len < 1 || r.len > 5) throw std::invalid_argument("herd::term::reference: 1 to 5 words");
  auto* n = new detail::ref_node;
  n->v = r;
  std::fill(n->v.ids.begin() + r.len, n->v.ids.end(), 0u);
  return term_access::adopt(rep::ref, n);
}

term::kind term::type() const noexcept {
  switch (rep_) {
    case rep::small: case rep::big: return kind::integer;
    case rep::flt: return kind::float_;
    case rep::atom: return kind::atom;
    case rep::nil: return kind::nil;
    case rep::tuple: return kind::tuple;
    case rep::list: return kind::list;
    case rep::map: return kind::map;
    case rep::bits: return kind::bitstring;
    case rep::pid: return kind::pid;
    case rep::port: return kind::port;
    case rep::ref: return kind::reference;
    case rep::fun: return kind::fun;
  }
  return kind::nil;
}

bool term::is_proper_list() const noexcept {
  return rep_ == rep::nil || (rep_ == rep::list && term_access::as<detail::list_node>(*this).tail.is_nil());
}
bool term::is_binary() const noexcept {
  return rep_ == rep::bits && term_access::as<detail::bits_node>(*this).last_bits == 8;
}

std::optional<int64_t> term::to_int64() const {
  if (rep_ == rep::small) return u_.i;
  if (rep_ == rep::big) return std::nullopt;
  bad_access("an integer", *this);
}
bool term::negative() const {
  if (rep_ == rep::small) return u_.i < 0;
  if (rep_ == rep::big) return term_access::as<detail::big_node>(*this).neg;
  bad_access("an integer", *this);
}
std::vector<uint8_t> term::magnitude() const {
  if (rep_ == rep::big) return term_access::as<detail::big_node>(*this).mag;
  if (rep_ != rep::small) bad_access("an integer", *this);
  uint64_t u = u_.i < 0 ? 0 - uint64_t(u_.i) : uint64_t(u_.i);
  std::vector<uint8_t> m;
  for (; u; u >>= 8) m.push_back(uint8_t(u));
  return m;
}
double term::as_double() const {
  if (rep_ != rep::flt) bad_access("a float", *this);
  return u_.d;
}
atom term::as_atom() const {
  if (rep_ != rep::atom) bad_access("an atom", *this);
  return atom::from_index(aux_);
}
std::size_t term::size() const {
  switch (rep_) {
    case rep::tuple: return u_.p ? term_access::as<detail::tuple_node>(*this).elems.size() : 0;
    case rep::nil: return 0;
    case rep::list: return term_access::as<detail::list_node>(*this).elems.size();
    case rep::map: return term_access::as<detail::map_node>(*this).pairs.size();
    case rep::bits: return term_access::as<detail::bits_node>(*this).bytes.size();
    default: bad_access("a tuple, list, map or bitstring", *this);
  }
}
std::span<const term> term::elements() const {
  if (rep_ == rep::tuple) return u_.p ? std::span<const term>(term_access::as<detail::tuple_node>(*this).elems) : std::span<const term>();
  if (rep_ == rep::nil) return {};
  if (rep_ == rep::list) return term_access::as<detail::list_node>(*this).elems;
  bad_access("a tuple or list", *this);
}
const term& term::operator[](std::size_t i) const {
  if (rep_ != rep::tuple) bad_access("a tuple", *this);
  auto e = elements();
  if (i >= e.size()) throw bad_term_access("herd::term: element " + std::to_string(i) + " of a tuple of " + std::to_string(e.size()));
  return e[i];
}
const term& term::tail() const {
  static const term nil;  // a constant [] to refer to; never changes
  if (rep_ == rep::nil) return nil;
  if (rep_ != rep::list) bad_access("a list", *this);
  return term_access::as<detail::list_node>(*this).tail;
}
std::span<const std::pair<term, term>> term::pairs() const {
  if (rep_ != rep::map) bad_access("a map", *this);
  return term_access::as<detail::map_node>(*this).pairs;
}
const term* term::find(const term& key) const {
  if (rep_ != rep::map) bad_access("a map", *this);
  auto& m = term_access::as<detail::map_node>(*this);
  auto it = std::lower_bound(m.order.begin(), m.order.end(), key,
                             [&m](uint32_t i, const term& k) { return detail::key_less(m.pairs[i].first, k); });
  if (it == m.order.end() || !(m.pairs[*it].first == key)) return nullptr;
  return &m.pairs[*it].second;
}
std::string_view term::bytes() const {
  if (rep_ != rep::bits) bad_access("a bitstring", *this);
  return term_access::as<detail::bits_node>(*this).bytes;
}
std::size_t term::bit_size() const {
  if (rep_ != rep::bits) bad_access("a bitstring", *this);
  auto& b = term_access::as<detail::bits_node>(*this);
  return b.bytes.empty() ? 0 : (b.bytes.size() - 1) * 8 + b.last_bits;
}
const erl_pid& term::as_pid() const {
  if (rep_ != rep::pid) bad_access("a pid", *this);
  return term_access::as<detail::pid_node>(*this).v;
}
const erl_port& term::as_port() const {
  if (rep_ != rep::port) bad_access("a port", *this);
  return term_access::as<detail::port_node>(*this).v;
}
const erl_ref& term::as_reference() const {
  if (rep_ != rep::ref) bad_access("a reference", *this);
  return term_access::as<detail::ref_node>(*this).v;
}
std::string_view term::fun_encoding() const {
  if (rep_ != rep::fun) bad_access("a fun", *this);
  return term_access::as<detail::fun_node>(*this).enc;
}

std::optional<std::string> term::to_text() const {
  if (is_binary()) return std::string(bytes());
  if (!is_proper_list()) return std::nullopt;
  std::string out;
  for (const term& e : elements()) {
    if (e.rep_ != rep::small || e.u_.i < 0 || e.u_.i > 0x10FFFF || (e.u_.i >= 0xD800 && e.u_.i <= 0xDFFF)) return std::nullopt;
    auto cp = uint32_t(e.u_.i);
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }
  return out;
}

}  // namespace herd
