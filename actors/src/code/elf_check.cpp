// See elf_check.hpp. The file is untrusted input: every offset and size is
// checked against the image before it is read.
#include "code/elf_check.hpp"

#include <cxxabi.h>
#include <elf.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace herd::detail::elf {
namespace {

#if defined(__x86_64__)
constexpr uint16_t host_machine = EM_X86_64;
constexpr uint32_t relative_reloc = R_X86_64_RELATIVE;
#elif defined(__aarch64__)
constexpr uint16_t host_machine = EM_AARCH64;
constexpr uint32_t relative_reloc = R_AARCH64_RELATIVE;
#else
#error "herd: module loading: add this machine's ELF e_machine"
#endif

// The start of herd::detail::module_descriptor (module_handler.hpp), which
// must keep this layout (it only grows at the end).
struct herd_descriptor_prefix {
  uint32_t struct_size;
  uint32_t flags;
  uint64_t abi_hash;
  uint64_t abi_text;  // a pointer, relocated at load
};

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

// The section holding virtual address [addr, addr + len) with file contents,
// as a file offset; false if none.
bool file_offset_of(std::string_view img, const Elf64_Ehdr& eh, uint64_t addr, uint64_t len, uint64_t& off) {
  for (uint32_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    if (!read_at(img, eh.e_shoff + uint64_t(i) * sizeof(Elf64_Shdr), sh)) return false;
    if (!(sh.sh_flags & SHF_ALLOC) || sh.sh_type == SHT_NOBITS) continue;
    if (addr < sh.sh_addr || addr - sh.sh_addr > sh.sh_size || len > sh.sh_size - (addr - sh.sh_addr)) continue;
    off = sh.sh_offset + (addr - sh.sh_addr);
    return in_bounds(img, off, len);
  }
  return false;
}

// A NUL-terminated string at virtual address `addr`, at most 512 bytes.
std::string string_at(std::string_view img, const Elf64_Ehdr& eh, uint64_t addr) {
  uint64_t off = 0;
  if (!file_offset_of(img, eh, addr, 1, off)) return {};
  std::string_view rest = img.substr(off, 512);
  auto nul = rest.find('\0');
  return nul == std::string_view::npos ? std::string() : std::string(rest.substr(0, nul));
}

// Where the pointer at virtual address `slot` will point after relocation:
// a RELATIVE relocation's addend (RELA), else the value in the file (RELR and
// REL keep it in place). 0 if neither says.
uint64_t relocated_pointer(std::string_view img, const Elf64_Ehdr& eh, uint64_t slot) {
  for (uint32_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    if (!read_at(img, eh.e_shoff + uint64_t(i) * sizeof(Elf64_Shdr), sh)) return 0;
    if (sh.sh_type != SHT_RELA || sh.sh_entsize != sizeof(Elf64_Rela) || !in_bounds(img, sh.sh_offset, sh.sh_size))
      continue;
    for (uint64_t k = 0; k < sh.sh_size / sizeof(Elf64_Rela); ++k) {
      Elf64_Rela r;
      read_at(img, sh.sh_offset + k * sizeof(Elf64_Rela), r);
      if (r.r_offset == slot && ELF64_R_TYPE(r.r_info) == relative_reloc) return static_cast<uint64_t>(r.r_addend);
    }
  }
  uint64_t off = 0, v = 0;
  if (file_offset_of(img, eh, slot, sizeof v, off)) read_at(img, off, v);
  return v;
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

  inspection ok;
  std::size_t n = dynsym.sh_size / sizeof(Elf64_Sym);
  for (std::size_t i = 1; i < n; ++i) {
    Elf64_Sym s;
    read_at(img, dynsym.sh_offset + i * sizeof(Elf64_Sym), s);
    const char* name = name_of(s.st_name);
    if (!name) return fail("bad symbol name offset in the dynamic symbol table", true);
    if (s.st_shndx != SHN_UNDEF && std::strcmp(name, "herd_module_descriptor_v1") == 0) {
      // struct_size and abi_hash are plain integers: final in the file.
      uint64_t off = 0;
      constexpr uint64_t head = offsetof(herd_descriptor_prefix, abi_text) + sizeof(uint64_t);
      if (s.st_size < head || !file_offset_of(img, eh, s.st_value, head, off))
        return fail("herd_module_descriptor_v1 is not in the file's contents", true);
      herd_descriptor_prefix d;
      read_at(img, off, d);
      ok.has_descriptor = true;
      ok.descriptor_size = d.struct_size;
      ok.abi_hash = d.abi_hash;
      if (uint64_t text = relocated_pointer(img, eh, s.st_value + offsetof(herd_descriptor_prefix, abi_text)))
        ok.abi_text = string_at(img, eh, text);
    }
    if (ELF64_ST_BIND(s.st_info) == STB_GNU_UNIQUE)
      return fail("defines the GNU unique symbol " + demangled(name) +
                  ": the dynamic linker would never unload it (build with -fno-gnu-unique: herd_add_module does)");
    if (s.st_shndx == SHN_UNDEF &&
        (std::strcmp(name, "__cxa_thread_atexit") == 0 || std::strcmp(name, "__cxa_thread_atexit_impl") == 0))
      return fail(std::string("uses ") + name +
                  ": a thread_local with a destructor pins the module until every thread exits "
                  "(make it trivially destructible, or keep it in the host)");
  }

  // DT_NEEDED, from the dynamic section and its string table (sh_link).
  for (uint32_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh, str;
    if (!read_at(img, eh.e_shoff + uint64_t(i) * sizeof(Elf64_Shdr), sh)) return fail("truncated section headers", true);
    if (sh.sh_type != SHT_DYNAMIC) continue;
    if (sh.sh_entsize != sizeof(Elf64_Dyn) || !in_bounds(img, sh.sh_offset, sh.sh_size) || sh.sh_link >= eh.e_shnum ||
        !read_at(img, eh.e_shoff + uint64_t(sh.sh_link) * sizeof(Elf64_Shdr), str) ||
        !in_bounds(img, str.sh_offset, str.sh_size))
      return fail("bad dynamic section", true);
    std::string_view names = img.substr(str.sh_offset, str.sh_size);
    for (uint64_t k = 0; k < sh.sh_size / sizeof(Elf64_Dyn); ++k) {
      Elf64_Dyn d;
      read_at(img, sh.sh_offset + k * sizeof(Elf64_Dyn), d);
      if (d.d_tag == DT_NULL) break;
      if (d.d_tag != DT_NEEDED) continue;
      if (d.d_un.d_val >= names.size()) return fail("bad DT_NEEDED name offset", true);
      auto nul = names.find('\0', d.d_un.d_val);
      if (nul == std::string_view::npos) return fail("bad DT_NEEDED name", true);
      ok.needed.emplace_back(names.substr(d.d_un.d_val, nul - d.d_un.d_val));
    }
    break;
  }
  ok.ok = true;
  return ok;
}

}  // namespace herd::detail::elf
