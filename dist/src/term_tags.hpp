// The external term format's tags (erts's external.h names). Private.
#pragma once
#include <cstdint>

namespace herd::detail::etf {

enum : uint8_t {
  version = 131,
  compressed = 80,
  new_float = 70,
  bit_binary = 77,
  atom_cache_ref = 82,
  new_pid = 88,
  new_port = 89,
  newer_reference = 90,
  small_integer = 97,
  integer = 98,
  float_ = 99,
  atom_latin1 = 100,
  reference = 101,
  port = 102,
  pid = 103,
  small_tuple = 104,
  large_tuple = 105,
  nil = 106,
  string = 107,
  list = 108,
  binary = 109,
  small_big = 110,
  large_big = 111,
  new_fun = 112,
  export_ = 113,
  new_reference = 114,
  small_atom_latin1 = 115,
  map = 116,
  fun_old = 117,
  atom_utf8 = 118,
  small_atom_utf8 = 119,
  v4_port = 120,
  local = 121,
};

}  // namespace herd::detail::etf
