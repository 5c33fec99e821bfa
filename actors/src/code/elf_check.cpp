// See elf_check.hpp. The file is untrusted input: every offset and size is
// checked against the image before it is read.
#include "code/elf_check.hpp"

#include <cxxabi.h>
#include <elf.h>

#include <cstdlib>
#include <cstring>

namespace herd::detail::elf {
namespace {

#if defined(__x86_64__)
constexpr uint16_t host_machine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t host_machine = EM_AARCH64;
#else
#error "herd: module loading: add this machine's ELF e_machine"
#endif

bool in_bounds(std::string_view img, uint64_t off, uint64_t len) {
  return off <= img.size() && len <= img.size() - off;
}

template <class T>
bool read_at(std::string_view img, uint64_t off, T& out) {
  if (!in_bounds(img, off, sizeof(T))) return false;
  std::memcpy(&out, img.data() + off, sizeof(T));
  return true;
}

std::string demangled(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string s = (status == 0 && d) ? std::string(d) + " (" + name + ")" : std::string(name);
  std::free(d);
  return s;
}

inspection fail(std::string why, bool not_elf = false) {
  inspection r;
  r.not_elf = not_elf;
  r.why = std::move(why);
  return r;
}

}  // namespace

static_assert(sizeof(Elf64_Ehdr) == header_size);

inspection check_header(std::string_view img) {
  Elf64_Ehdr eh;
  if (!read_at(img, 0, eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    return fail("not an ELF file", true);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64) return fail("not a 64-bit ELF object", true);
  if (eh.e_type != ET_DYN) return fail("not a shared object (ELF type " + std::to_string(eh.e_type) + ")", true);
  if (eh.e_machine != host_machine) return fail("built for another machine (e_machine " + std::to_string(eh.e_machine) + ")", true);
  inspection ok;
  ok.ok = true;
  return ok;
}

inspection inspect(std::string_view img) {
  if (inspection h = check_header(img); !h.ok) return h;
  Elf64_Ehdr eh;
  read_at(img, 0, eh);
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0)
    return fail("no section headers: cannot inspect its dynamic symbols", true);

  // The dynamic symbol table and its string table (sh_link).
  Elf64_Shdr dynsym{}, dynstr{};
  bool found = false;
  for (uint32_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    if (!read_at(img, eh.e_shoff + uint64_t(i) * sizeof(Elf64_Shdr), sh)) return fail("truncated section headers", true);
    if (sh.sh_type != SHT_DYNSYM) continue;
    if (sh.sh_link >= eh.e_shnum ||
        !read_at(img, eh.e_shoff + uint64_t(sh.sh_link) * sizeof(Elf64_Shdr), dynstr))
      return fail("bad .dynsym string table link", true);
    dynsym = sh;
    found = true;
    break;
  }
  if (!found) return fail("no dynamic symbol table", true);
  if (dynsym.sh_entsize != sizeof(Elf64_Sym) || !in_bounds(img, dynsym.sh_offset, dynsym.sh_size) ||
      !in_bounds(img, dynstr.sh_offset, dynstr.sh_size))
    return fail("bad dynamic symbol table", true);

  std::string_view strtab = img.substr(dynstr.sh_offset, dynstr.sh_size);
  auto name_of = [&](uint32_t off) -> const char* {
    if (off >= strtab.size()) return nullptr;
    // NUL-terminated within the table, or refused.
    if (std::memchr(strtab.data() + off, '\0', strtab.size() - off) == nullptr) return nullptr;
    return strtab.data() + off;
  };

  std::size_t n = dynsym.sh_size / sizeof(Elf64_Sym);
  for (std::size_t i = 1; i < n; ++i) {
    Elf64_Sym s;
    read_at(img, dynsym.sh_offset + i * sizeof(Elf64_Sym), s);
    const char* name = name_of(s.st_name);
    if (!name) return fail("bad symbol name offset in the dynamic symbol table", true);
    if (ELF64_ST_BIND(s.st_info) == STB_GNU_UNIQUE)
      return fail("defines the GNU unique symbol " + demangled(name) +
                  ": the dynamic linker would never unload it (build with -fno-gnu-unique: herd_add_module does)");
    if (s.st_shndx == SHN_UNDEF &&
        (std::strcmp(name, "__cxa_thread_atexit") == 0 || std::strcmp(name, "__cxa_thread_atexit_impl") == 0))
      return fail(std::string("uses ") + name +
                  ": a thread_local with a destructor pins the module until every thread exits "
                  "(make it trivially destructible, or keep it in the host)");
  }
  inspection ok;
  ok.ok = true;
  return ok;
}

}  // namespace herd::detail::elf
