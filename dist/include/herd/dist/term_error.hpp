// What decoding a term, or reading a C++ value out of one, reports: a code,
// the byte offset in the input where decoding stopped (0 for a conversion),
// and a detail ("LIST_EXT of 4294967295 elements, 12 bytes left").
//
//   auto t = herd::binary_to_term(bytes);
//   if (!t) log(t.error().message());  // "truncated at byte 7: BINARY_EXT of 100 bytes, 3 left"
#pragma once
#include <herd/actors/result.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace herd {

enum class term_errc : uint8_t {
  truncated,        // the input ends inside a term
  bad_version,      // not 131 where the version byte belongs
  unknown_tag,      // a tag this decoder does not know (or ATOM_CACHE_REF outside a dist header)
  bad_atom,         // not UTF-8, more than 255 code points
  atom_table_full,  // a new atom past atom::max_atoms()
  bad_value,        // a field out of range: a NaN float, a bitstring tail of 0 bits, a reference of 6 words
  duplicate_key,    // a map with a key twice
  too_deep,         // nesting deeper than decode_options::max_depth
  too_large,        // a compressed term that would unpack past decode_options::max_size
  zlib,             // a compressed term that does not inflate
  trailing_bytes,   // bytes after the term (binary_to_term)
  mismatch,         // from_term: the term does not have the shape of the C++ type
};

const char* to_string(term_errc c) noexcept;

struct term_error {
  term_errc code;
  std::size_t offset = 0;
  std::string detail{};
  std::string message() const;
};

template <class T>
using term_result = herd::result<T, term_error>;

}  // namespace herd
