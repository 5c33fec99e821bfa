// herd::term in Erlang's external term format (ETF), both ways.
//
//   std::string b = herd::term_to_binary(t);        // erlang:term_to_binary(T, [{minor_version, 2}])
//   auto t2 = herd::binary_to_term(b);              // herd::term_result<herd::term>
//   if (!t2) log(t2.error().message());             // "truncated at byte 9: ..."
//
// Encoding is OTP 26's default (what OTP 25 writes with {minor_version, 2}
// and sends between nodes): atoms in UTF-8, NEW_FLOAT_EXT, NEW_PID_EXT,
// NEWER_REFERENCE_EXT, STRING_EXT for a list of 1..65535 bytes. A map is
// written in its pairs' order: a map built in C++ in key order (BEAM's
// order for up to 32 keys), a decoded one as received — so a term from
// BEAM re-encodes to its very bytes, a 40-key map too.
//
// Decoding reads every tag OTP 25 writes and the older ones (ATOM_EXT,
// SMALL_ATOM_EXT, PID_EXT, NEW_REFERENCE_EXT, REFERENCE_EXT, PORT_EXT,
// FLOAT_EXT) and zlib-compressed terms. It is written for untrusted bytes:
// it never reads past the input, allocates in proportion to the input (a
// length field is checked against the bytes left before anything is
// reserved; a compressed term may unpack to at most max_size), is
// iterative, and refuses nesting deeper than max_depth, so that the term's
// recursive readers (compare, print, encode) stay within an actor's stack.
// An error names the byte offset where decoding stopped. New atoms go into
// the node-wide atom table, which is bounded (atom::max_atoms()).
#pragma once
#include <herd/dist/term.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace herd {

struct decode_options {
  // Tuples, lists and maps inside each other. The recursive readers
  // (compare, hash, print, encode) take ~95-110 bytes of stack a level
  // optimised and up to ~365 at -O0 (termbench's stack rows): at 100 levels
  // that is at most ~37 KiB of an actor's 64 KiB even in a debug build.
  uint32_t max_depth = 100;
  // A compressed term's unpacked size, at most.
  std::size_t max_size = std::size_t(64) << 20;
};

// 131, then the term.
std::string term_to_binary(const term& t);
// The term without the version byte, appended to `out` (a distribution
// message's control and payload terms are written back to back).
void encode_term(const term& t, std::string& out);

// One whole term: 131 first, nothing after (trailing_bytes).
term_result<term> binary_to_term(std::string_view bytes, const decode_options& opts = {});
// One term at `offset`, without a version byte (a tag; COMPRESSED too);
// on success `offset` moves past it, on an error it stays.
term_result<term> decode_term(std::string_view bytes, std::size_t& offset, const decode_options& opts = {});

}  // namespace herd
