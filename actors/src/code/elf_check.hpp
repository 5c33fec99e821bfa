// Reads a candidate module's ELF dynamic symbol table, before any of its code
// runs, for what would make it impossible to unload:
//  * STB_GNU_UNIQUE symbols: the dynamic linker marks an object that defines
//    one NODELETE (glibc, dl-lookup.c), so dlclose never unmaps it. g++ emits
//    them for inline variables and function-local statics of default
//    visibility (std::make_shared's type tag is one) unless -fno-gnu-unique.
//  * an undefined reference to __cxa_thread_atexit(_impl): a thread_local
//    with a destructor registers it per thread, and glibc keeps the object
//    loaded until every such thread has exited — workers live forever.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace herd::detail::elf {

struct inspection {
  bool ok = false;
  bool not_elf = false;    // not a shared object for this machine: `why` says how
  std::string why;         // when !ok
};

// Bytes of the ELF header (the most check_header needs).
inline constexpr std::size_t header_size = 64;

// Pure; any thread. The file's first bytes (up to header_size; fewer only
// when the file is shorter): is it a 64-bit shared object for this machine?
inspection check_header(std::string_view first_bytes);

// Pure; any thread. `image` is the whole file.
inspection inspect(std::string_view image);

}  // namespace herd::detail::elf
