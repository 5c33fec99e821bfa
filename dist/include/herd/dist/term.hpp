// herd::term: an Erlang term as a C++ value — what crosses a node boundary.
//
//   herd::term t = herd::term::tuple({herd::atom("push"), herd::term::binary("user42"), 12345});
//   herd::to_string(t);                        // {push,<<"user42">>,12345}
//   if (t.is_tuple() && t[0] == herd::atom("push")) ...
//
// Every Erlang type: integers of any size (int64 inline, bignums as sign +
// magnitude), floats, atoms (interned: comparing two is an integer compare),
// bitstrings (binaries are bitstrings of whole bytes), lists (proper or
// improper, and []), tuples, maps, pids, ports, references and funs (funs are
// kept as their encoded bytes and round-trip unchanged).
//
// A term is 16 bytes and immutable. Integers that fit 64 bits, floats,
// atoms, [] and {} live inline and never allocate; the rest share one
// reference-counted node, so a copy is an atomic increment and a term may be
// sent to other processes and read from any thread at once.
//
// Comparison is Erlang's term order (number < atom < reference < fun < port
// < pid < tuple < map < [] < list < bitstring). `==` is exact, as Erlang's
// `=:=` (1 and 1.0 differ, so do 0.0 and -0.0, as in OTP 27); `<=>` is a
// total order consistent with it: where Erlang's order calls two numbers
// equal (1 and 1.0), the integer comes first, as in map key order.
//
// Construction errors (invalid UTF-8 in an atom, a NaN, a bitstring tail
// of more than 8 bits) throw std::invalid_argument; reading a term as the
// wrong type (as_atom() on an integer) throws herd::bad_term_access. Ways
// that return an error instead: atom::make, herd::binary_to_term, from_term.
// Deep nesting: the copy, destruction and decoding are iterative; compare,
// hash, print and encode recurse once per level of nesting, which decoding
// bounds (decode_options::max_depth). Docs: docs/distribution.md ("Terms").
#pragma once
#include <herd/dist/term_atom.hpp>

#include <array>
#include <atomic>
#include <compare>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace herd {

struct bad_term_access : std::logic_error {
  using std::logic_error::logic_error;
};

// A process identifier as Erlang has it (NEW_PID_EXT): a node-local id and
// serial, the node's name and its incarnation (creation).
struct erl_pid {
  atom node;
  uint32_t id = 0;
  uint32_t serial = 0;
  uint32_t creation = 0;
  friend bool operator==(const erl_pid&, const erl_pid&) = default;
};

struct erl_port {
  atom node;
  uint64_t id = 0;
  uint32_t creation = 0;
  friend bool operator==(const erl_port&, const erl_port&) = default;
};

// A reference: 1 to 5 32-bit words (OTP 25 makes 3, or 4 or 5 for a
// reference that names a process).
struct erl_ref {
  atom node;
  uint32_t creation = 0;
  uint8_t len = 0;
  std::array<uint32_t, 5> ids{};
  std::span<const uint32_t> words() const noexcept { return {ids.data(), len}; }
  friend bool operator==(const erl_ref& a, const erl_ref& b) noexcept {
    return a.node == b.node && a.creation == b.creation && a.len == b.len &&
           std::equal(a.ids.begin(), a.ids.begin() + a.len, b.ids.begin());
  }
};

namespace detail {
struct term_node;
struct term_access;
}

class term {
 public:
  enum class kind : uint8_t { integer, float_, atom, reference, fun, port, pid, tuple, map, nil, list, bitstring };

  term() noexcept : rep_(rep::nil) { u_.i = 0; }  // []
  template <std::integral I>
    requires(!std::same_as<I, bool> && !std::same_as<I, char>)
  term(I v) : rep_(rep::small) {  // implicit, so 12345 reads as a term
    u_.i = 0;
    if constexpr (std::is_unsigned_v<I> && sizeof(I) >= sizeof(int64_t)) {
      if (v > uint64_t(INT64_MAX)) {
        *this = from_u64(uint64_t(v));
        return;
      }
    }
    u_.i = int64_t(v);
  }
  term(double d);  // std::invalid_argument if not finite
  term(atom a) noexcept : rep_(rep::atom), aux_(a.index()) { u_.i = 0; }
  term(bool) = delete;         // term::boolean(b): which atom is meant must be visible
  term(const char*) = delete;  // atom("x") or term::binary("x")?
  term(const term& o) noexcept;
  term(term&& o) noexcept : rep_(o.rep_), aux_(o.aux_), u_(o.u_) { o.rep_ = rep::nil; }
  term& operator=(const term& o) noexcept;
  term& operator=(term&& o) noexcept;
  ~term();

  static term boolean(bool b) { return term(atom(b ? "true" : "false")); }
  static term tuple(std::vector<term> elems);
  static term tuple(std::initializer_list<term> elems) { return tuple(std::vector<term>(elems)); }
  // A list ending in `tail` ([] for a proper list). A list tail is
  // flattened in: list({1}, list({2})) == list({1, 2}).
  static term list(std::vector<term> elems, term tail = term());
  static term list(std::initializer_list<term> elems) { return list(std::vector<term>(elems)); }
  // Kept in key order (as BEAM keeps a map of up to 32 keys); of a key
  // given twice the later value wins (as maps:from_list).
  static term map(std::vector<std::pair<term, term>> pairs);
  static term binary(std::string_view bytes);
  static term binary(std::span<const uint8_t> bytes);
  // A bitstring of bytes.size() - 1 whole bytes and `last_bits` (1..8) bits
  // of the last byte, its high bits (the low bits are cleared).
  static term bitstring(std::string_view bytes, unsigned last_bits);
  // An Erlang string: the list of `utf8`'s code points ([] if empty).
  static term string(std::string_view utf8);
  // Any integer: negative, magnitude as little-endian bytes.
  static term integer(bool negative, std::span<const uint8_t> magnitude_le);
  // A decimal integer ("-1267650600228229401496703205376"); nullopt if not one.
  static std::optional<term> parse_integer(std::string_view decimal);
  static term pid(const erl_pid& p);
  static term port(const erl_port& p);
  static term reference(const erl_ref& r);  // std::invalid_argument unless 1 <= len <= 5
  // A fun from its encoded form (NEW_FUN_EXT or EXPORT_EXT, tag byte first,
  // no version byte), as decoded; std::invalid_argument otherwise.
  static term fun_bytes(std::string_view encoded);
  static term export_fun(atom module, atom function, uint8_t arity);

  kind type() const noexcept;
  bool is_integer() const noexcept { return rep_ == rep::small || rep_ == rep::big; }
  bool is_float() const noexcept { return rep_ == rep::flt; }
  bool is_number() const noexcept { return is_integer() || is_float(); }
  bool is_atom() const noexcept { return rep_ == rep::atom; }
  bool is_atom(atom a) const noexcept { return rep_ == rep::atom && aux_ == a.index(); }
  bool is_nil() const noexcept { return rep_ == rep::nil; }
  bool is_list() const noexcept { return rep_ == rep::list || rep_ == rep::nil; }  // incl. []
  bool is_proper_list() const noexcept;
  bool is_tuple() const noexcept { return rep_ == rep::tuple; }
  bool is_map() const noexcept { return rep_ == rep::map; }
  bool is_bitstring() const noexcept { return rep_ == rep::bits; }
  bool is_binary() const noexcept;  // a bitstring of whole bytes
  bool is_pid() const noexcept { return rep_ == rep::pid; }
  bool is_port() const noexcept { return rep_ == rep::port; }
  bool is_reference() const noexcept { return rep_ == rep::ref; }
  bool is_fun() const noexcept { return rep_ == rep::fun; }

  // Readers; bad_term_access when the term is of another type.
  // The value, if an integer that fits; nullopt for a larger integer.
  std::optional<int64_t> to_int64() const;
  bool negative() const;                     // an integer's sign
  std::vector<uint8_t> magnitude() const;    // an integer's |value|, little-endian, no high zeros
  double as_double() const;                  // a float
  atom as_atom() const;
  std::size_t size() const;                  // a tuple's arity, a list's elements, a map's pairs, a bitstring's bytes
  std::span<const term> elements() const;    // a tuple's or a list's elements ({} and []: none)
  const term& operator[](std::size_t i) const;  // a tuple's element i (bad_term_access past the end)
  const term& tail() const;                  // a list's tail ([] for a proper list)
  std::span<const std::pair<term, term>> pairs() const;  // a map's pairs: built, in key order; decoded, as received
  const term* find(const term& key) const;   // a map's value for `key`, or nullptr
  std::string_view bytes() const;            // a bitstring's bytes
  std::size_t bit_size() const;              // a bitstring's length in bits
  const erl_pid& as_pid() const;
  const erl_port& as_port() const;
  const erl_ref& as_reference() const;
  std::string_view fun_encoding() const;     // a fun's encoded bytes
  // A binary's bytes, or a proper list of code points as UTF-8; nullopt otherwise.
  std::optional<std::string> to_text() const;

  friend bool operator==(const term& a, const term& b) noexcept;
  friend std::strong_ordering operator<=>(const term& a, const term& b) noexcept;
  std::size_t hash() const noexcept;

 private:
  friend struct detail::term_access;
  enum class rep : uint8_t { small, big, flt, atom, nil, tuple, list, map, bits, pid, port, ref, fun };
  static term from_u64(uint64_t v);
  bool heap() const noexcept { return rep_ == rep::big || rep_ >= rep::list || (rep_ == rep::tuple && u_.p); }
  rep rep_;
  uint32_t aux_ = 0;
  union {
    int64_t i;
    double d;
    detail::term_node* p;
  } u_;
};
static_assert(sizeof(term) == 16);

// Erlang syntax: {ok,[1,2|x]}, #{a => 1}, <<"hi">>, <<1,2:3>>, 'Quoted atom',
// "abc" (a list of printable ASCII), <0.12.0> (a pid of nonode@nohost; a pid
// of another node prints its name: <beam@host.85.0>), #Ref<0.1.2.3>, #Port<0.5>.
std::string to_string(const term& t);
std::ostream& operator<<(std::ostream& os, const term& t);

}  // namespace herd

template <>
struct std::hash<herd::term> {
  std::size_t operator()(const herd::term& t) const noexcept { return t.hash(); }
};
