// herd::atom: an interned Erlang atom. Two atoms are equal when their
// indexes are (an integer compare); they order by their text, as in Erlang.
//
// The table is node-wide and, as BEAM's, never shrinks: an atom made once
// lives until the program ends, so atoms are not for unbounded data (user
// names, ids). It holds at most max_atoms() atoms; past that, atom::make
// (and decoding a term with a new atom) fails with atom_table_full and the
// atom(text) constructor throws. Any thread may make and read atoms.
#pragma once
#include <herd/dist/term_error.hpp>

#include <compare>
#include <cstdint>
#include <string_view>

namespace herd {

class atom {
 public:
  // '' (the empty atom).
  atom() noexcept = default;
  // std::invalid_argument: not UTF-8, more than 255 code points, or the table is full.
  explicit atom(std::string_view utf8);
  // The same checks as an error value: bad_atom, atom_table_full.
  static term_result<atom> make(std::string_view utf8);
  // The atom with this index; only indexes an atom gave out.
  static atom from_index(uint32_t i) noexcept { atom a; a.i_ = i; return a; }
  static uint32_t max_atoms() noexcept;
  static uint32_t count() noexcept;  // atoms made so far

  std::string_view text() const noexcept;
  uint32_t index() const noexcept { return i_; }
  friend bool operator==(atom a, atom b) noexcept { return a.i_ == b.i_; }
  friend std::strong_ordering operator<=>(atom a, atom b) noexcept;

 private:
  uint32_t i_ = 0;
};

}  // namespace herd
