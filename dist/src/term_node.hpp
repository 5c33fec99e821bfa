// The heap side of herd::term: one reference-counted, immutable node per
// value that does not fit inline. Private to dist/src.
#pragma once
#include <herd/dist/term.hpp>

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace herd::detail {

struct term_node {
  // Increments are relaxed (a copy is made from a live reference); the
  // decrement that frees is acq_rel so every reader's accesses happen
  // before the delete.
  std::atomic<uint32_t> refs{1};
};

struct big_node : term_node {
  bool neg = false;
  std::vector<uint8_t> mag;  // little-endian, no high zero bytes, never fits int64
};
struct tuple_node : term_node {
  std::vector<term> elems;  // non-empty ({} is inline)
};
struct list_node : term_node {
  std::vector<term> elems;  // non-empty
  term tail;                // never a list: list() flattens one in
};
struct map_node : term_node {
  std::vector<std::pair<term, term>> pairs;  // as given (encoding order)
  std::vector<uint32_t> order;               // indexes into pairs, keys ascending
};
struct bits_node : term_node {
  std::string bytes;
  uint8_t last_bits = 8;  // bits used in the last byte, 1..8 (8: a binary)
};
struct pid_node : term_node {
  erl_pid v;
  // The node number (herd::dist's) of the connection whose message the pid
  // was decoded from (pid_origin_scope; 0: none): mapping it to a herd::pid
  // later, from the bare term, charges that connection's remote pid cap.
  uint32_t origin = 0;
};
struct port_node : term_node {
  erl_port v;
};
struct ref_node : term_node {
  erl_ref v;
};
struct fun_node : term_node {
  std::string enc;  // NEW_FUN_EXT or EXPORT_EXT, tag byte first
};

struct term_access {
  using rep = term::rep;
  static rep rep_of(const term& t) noexcept { return t.rep_; }
  static term_node* node(const term& t) noexcept { return t.u_.p; }
  static int64_t small(const term& t) noexcept { return t.u_.i; }
  static double flt(const term& t) noexcept { return t.u_.d; }
  static uint32_t atom_index(const term& t) noexcept { return t.aux_; }
  static term adopt(rep r, term_node* n) noexcept {
    term t;
    t.rep_ = r;
    t.u_.p = n;
    return t;
  }
  template <class N>
  static const N& as(const term& t) noexcept { return *static_cast<const N*>(t.u_.p); }
  // An integer from a sign and little-endian magnitude (trimmed here): inline when it fits.
  static term make_integer(bool neg, std::vector<uint8_t> mag);
  // A map from pairs, keys unique (the decoder checked); sorts the order index.
  static term make_map_unique(std::vector<std::pair<term, term>> pairs);
  // The index of the first duplicate key, if any (pairs in `order`).
  static bool has_duplicate_key(const map_node& m) noexcept;
};

// Erlang's term order on numbers and the rest (term_compare.cpp).
std::strong_ordering compare(const term& a, const term& b) noexcept;
// Map key order, used to sort a map's keys: term order (ints before equal floats).
inline bool key_less(const term& a, const term& b) noexcept { return compare(a, b) < 0; }

// Bignum helpers (term_bignum.cpp).
std::string big_to_decimal(bool neg, const std::vector<uint8_t>& mag);
// -1, 0, 1: an integer (neg, mag) against a finite double, exactly.
int compare_big_double(bool neg, const std::vector<uint8_t>& mag, double d) noexcept;

// UTF-8 checks (term_atom.cpp): code points, or -1 if not valid UTF-8.
long utf8_code_points(std::string_view s) noexcept;

// A share of the node-wide atom table (herd::dist gives one to each
// connection): while an atom_charge_scope is open on a thread, every atom
// that thread's decodes add to the table takes one from `left`; with none
// left the atom is refused (atom_table_full, "share spent") and `spent` set.
struct atom_budget {
  std::atomic<int64_t> left{0};
  std::atomic<bool> spent{false};
  std::atomic<bool> told{false};  // the owner was told once (herd::dist: the connection closes)
  void reset(int64_t n) noexcept {
    left.store(n, std::memory_order_relaxed);
    told.store(false, std::memory_order_relaxed);
    spent.store(false, std::memory_order_release);
  }
};
// Decoding does not suspend: a thread-local (read through a non-inlined
// accessor) is safe between its construction and destruction.
class atom_charge_scope {
 public:
  explicit atom_charge_scope(atom_budget* b) noexcept;
  ~atom_charge_scope();
  atom_charge_scope(const atom_charge_scope&) = delete;
  atom_charge_scope& operator=(const atom_charge_scope&) = delete;

 private:
  atom_budget* prev_;
};

// While open on a thread, the pids term::pid makes there carry `origin`
// (pid_node::origin): herd::dist opens one around the decoding of a peer's
// message. Decoding does not suspend: a thread-local.
class pid_origin_scope {
 public:
  explicit pid_origin_scope(uint32_t origin) noexcept;
  ~pid_origin_scope();
  pid_origin_scope(const pid_origin_scope&) = delete;
  pid_origin_scope& operator=(const pid_origin_scope&) = delete;

 private:
  uint32_t prev_;
};
// The origin a pid term carries (0: none, or not a pid).
uint32_t pid_origin_of(const term& t) noexcept;

}  // namespace herd::detail
