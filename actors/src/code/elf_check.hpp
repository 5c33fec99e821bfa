// Reads a candidate module's ELF file, before any of its code runs: its
// dependencies (DT_NEEDED: a sanitizer runtime the node has not loaded would
// abort the node inside dlopen), its herd descriptor's ABI hash, and what
// would make it impossible to unload:
//  * STB_GNU_UNIQUE symbols: the dynamic linker marks an object that defines
//    one NODELETE (glibc, dl-lookup.c), so dlclose never unmaps it. g++ emits
//    them for inline variables and function-local statics of default
//    visibility (std::make_shared's type tag is one) unless -fno-gnu-unique.
//  * an undefined reference to __cxa_thread_atexit(_impl): a thread_local
//    with a destructor registers it per thread, and glibc keeps the object
//    loaded until every such thread has exited — workers live forever.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace herd::detail::elf {

struct inspection {
  bool ok = false;
  bool not_elf = false;    // not a shared object for this machine: `why` says how
  std::string why;         // when !ok

  // What the loader checks before dlopen runs any of the module's code (its
  // dependencies' constructors, its own, the sanitizer runtime's).
  std::vector<std::string> needed;  // DT_NEEDED, in order
  // herd_module_descriptor_v1 as the file holds it (before relocation: the
  // integers are final, the pointers are not).
  bool has_descriptor = false;
  uint32_t descriptor_size = 0;     // its struct_size field
  uint64_t abi_hash = 0;
  std::string abi_text;             // found through its RELATIVE relocation; "" if not
};

// Bytes of the ELF header (the most check_header needs).
inline constexpr std::size_t header_size = 64;

// Pure; any thread. The file's first bytes (up to header_size; fewer only
// when the file is shorter): is it a 64-bit shared object for this machine?
inspection check_header(std::string_view first_bytes);

// Pure; any thread. `image` is the whole file.
inspection inspect(std::string_view image);

}  // namespace herd::detail::elf
