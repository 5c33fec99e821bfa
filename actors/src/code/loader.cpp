// load's blocking half: from a path to a dlopened, checked version in state
// `loading` (see registry.cpp for what happens next). Runs on the blocking
// pool: file I/O, dlopen (the loader lock, relocation, static constructors)
// and the factory probe must not hold a worker.
//
// dlopen runs code: the static constructors of the module and of every
// library it needs (a sanitizer runtime's among them, which ends the process
// when it is not the process's first library). So everything the file alone
// can decide is decided before it: ELF type and machine, unloadability (GNU
// unique symbols, thread_local destructors), the descriptor's presence, size
// and ABI hash (read from the file: integers are final before relocation),
// and sanitizer runtimes among DT_NEEDED that the node has not loaded. What
// only dlopen can tell — missing libraries or symbols (RTLD_NOW fails before
// any constructor runs), what constructors do, the factory — comes after.
#include <herd/actors/module.hpp>

#include "code/elf_check.hpp"
#include "code/registry.hpp"
#include "code/staging.hpp"

#include <cxxabi.h>
#include <dlfcn.h>

#include <cstddef>
#include <cstdlib>
#include <exception>
#include <utility>
#include <typeinfo>

namespace herd::detail::code {
namespace {

using modules::errc;

modules::error err(errc c, std::string msg) { return {c, std::move(msg)}; }

// elf_check.cpp reads the descriptor's first fields from the file.
static_assert(offsetof(module_descriptor, struct_size) == 0 && offsetof(module_descriptor, abi_hash) == 8 &&
              offsetof(module_descriptor, abi_text) == 16);

std::string abi_mismatch_text(const std::string& path, const char* text, uint64_t hash) {
  return path + ": herd ABI mismatch: module built with \"" + std::string(text && *text ? text : "?") + "\" (hash " +
         std::to_string(hash) + "), this node with \"" HERD_MODULE_ABI_TEXT "\" (hash " +
         std::to_string(module_abi_hash) + ")";
}

// A sanitizer runtime must be the first library of the process (ASan checks
// it in its constructor and ends the process: "ASan runtime does not come
// first"); dlopen cannot bring one in. "" or which sanitizer.
const char* sanitizer_runtime(const std::string& soname) {
  static constexpr std::pair<const char*, const char*> runtimes[] = {
      {"libasan.so", "AddressSanitizer"},           {"libhwasan.so", "HWAddressSanitizer"},
      {"libtsan.so", "ThreadSanitizer"},            {"liblsan.so", "LeakSanitizer"},
      {"libubsan.so", "UndefinedBehaviorSanitizer"}, {"libclang_rt.asan", "AddressSanitizer"},
      {"libclang_rt.hwasan", "HWAddressSanitizer"}, {"libclang_rt.tsan", "ThreadSanitizer"},
      {"libclang_rt.msan", "MemorySanitizer"},      {"libclang_rt.ubsan", "UndefinedBehaviorSanitizer"},
  };
  for (auto [prefix, what] : runtimes)
    if (soname.rfind(prefix, 0) == 0) return what;
  return "";
}

bool already_loaded(const std::string& soname) {
  void* h = ::dlopen(soname.c_str(), RTLD_LAZY | RTLD_NOLOAD);  // never loads
  if (h) ::dlclose(h);
  return h != nullptr;
}

// Every refusal that the file alone can decide, before dlopen runs any code
// of the module or of its dependencies. "" or why (with `code` set).
std::string refuse_before_dlopen(const std::string& path, const elf::inspection& ins, errc& code) {
  if (!ins.has_descriptor) {
    code = errc::missing_descriptor;
    return path + ": no herd_module_descriptor_v1 (not built with HERD_MODULE / herd_add_module)";
  }
  if (ins.descriptor_size < sizeof(module_descriptor) || ins.abi_hash != module_abi_hash) {
    code = errc::abi_mismatch;
    return abi_mismatch_text(path, ins.abi_text.c_str(), ins.abi_hash);
  }
  for (const std::string& n : ins.needed) {
    const char* san = sanitizer_runtime(n);
    if (*san && !already_loaded(n)) {
      code = errc::abi_mismatch;
      return path + ": built with " + san + " (it needs " + n +
             "), which this node was not started with: its runtime must be the process's first library, and "
             "dlopen would end the node";
    }
  }
  return {};
}

std::string describe_current_exception() {
  std::type_info* t = abi::__cxa_current_exception_type();
  std::string type = "unknown exception";
  if (t) {
    int status = 0;
    char* d = abi::__cxa_demangle(t->name(), nullptr, nullptr, &status);
    type = (status == 0 && d) ? d : t->name();
    std::free(d);
  }
  try {
    throw;
  } catch (const std::exception& e) {
    return type + ": " + e.what();
  } catch (...) {
    return type;
  }
}

}  // namespace

std::string module_exception_text() { return describe_current_exception(); }

modules::result<modules::loaded> prepare(const std::string& path, const std::string& dir, uint64_t max_size, module_version*& out) {
  staging::candidate c;
  if (auto r = staging::read_candidate(path, dir, max_size, c); !r) return r.error();

  elf::inspection ins = elf::inspect(c.bytes);
  if (!ins.ok)
    return err(ins.not_elf ? errc::not_a_shared_object : errc::unloadable, c.path + ": " + ins.why);
  errc refusal = errc::abi_mismatch;
  if (std::string why = refuse_before_dlopen(c.path, ins, refusal); !why.empty()) return err(refusal, why);

  std::string serr;
  std::string sdir = staging::staging_dir(serr);
  if (sdir.empty()) return err(errc::io_error, serr);
  registry& reg = registry::get();
  module_version* v = reg.add_loading(c.path, sdir, c.stem, staging::content_hash(c.bytes));
  if (std::string e = staging::write_staged(sdir, v->staged_path.substr(sdir.size() + 1), c.bytes); !e.empty()) {
    reg.discard(v);
    return err(errc::io_error, "staging " + c.path + ": " + e);
  }

  // RTLD_LOCAL: the module's symbols never satisfy anyone else's. Not
  // RTLD_DEEPBIND (ASan refuses it); herd_add_module links -Bsymbolic instead.
  void* dl = ::dlopen(v->staged_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    const char* e = ::dlerror();
    std::string msg = c.path + ": dlopen: " + (e ? e : "unknown error");
    reg.discard(v);
    return err(errc::dlopen_failed, msg);
  }
  auto close_now = [&] {
    ::dlclose(dl);
    reg.discard(v);
  };
  auto* d = static_cast<const module_descriptor*>(::dlsym(dl, "herd_module_descriptor_v1"));
  if (!d) {
    close_now();
    return err(errc::missing_descriptor,
               c.path + ": no herd_module_descriptor_v1 (not built with HERD_MODULE / herd_add_module)");
  }
  // Checked in the file already; again here in case relocation changed it.
  if (d->struct_size < sizeof(module_descriptor) || d->abi_hash != module_abi_hash) {
    std::string msg = abi_mismatch_text(c.path, d->abi_text, d->abi_hash);
    close_now();
    return err(errc::abi_mismatch, msg);
  }
  module_anchor* a = d->anchor;
  if (!a || a->version.load(std::memory_order_acquire) != nullptr) {
    // dlopen handed back a copy that is already loaded: never share one.
    close_now();
    return err(errc::dlopen_failed, c.path + ": dlopen returned an already loaded copy");
  }

  {
    std::lock_guard<std::mutex> g(reg.m);
    v->name = d->name;
    v->version = d->version;
    for (uint32_t i = 0; i < d->upgrade_from_count; ++i) v->upgrade_from.emplace_back(d->upgrade_from[i]);
    v->never_switch = (d->flags & module_flag_never_switch) != 0;
    v->interface_id = d->interface_id;
    v->interface_name.assign(d->interface_name, d->interface_name_len);
    v->dl = dl;
    v->desc = d;
    v->anchor = a;
  }
  // From here the version unloads through its reference count.
  a->refs.fetch_add(1, std::memory_order_relaxed);            // the loader's, later the registry's
  a->version.store(v, std::memory_order_release);            // pairs with module_release's acquire

  // Probe the factory once: a module whose factory throws is refused now
  // rather than at the first connection.
  std::string failure;
  try {
    handler* h = d->create();
    delete h;
  } catch (...) {
    failure = describe_current_exception();
  }
  if (!failure.empty()) {
    std::string msg = c.path + ": module " + v->name + " " + v->version + ": the factory threw " + failure;
    abandon(v);
    return err(errc::factory_failed, msg);
  }
  out = v;
  return modules::loaded{v->name, v->version};
}

}  // namespace herd::detail::code

namespace herd::modules {

const char* to_string(errc e) noexcept {
  switch (e) {
    case errc::no_module_dir: return "no_module_dir";
    case errc::file_missing: return "file_missing";
    case errc::outside_module_dir: return "outside_module_dir";
    case errc::unsafe_permissions: return "unsafe_permissions";
    case errc::io_error: return "io_error";
    case errc::not_a_shared_object: return "not_a_shared_object";
    case errc::unloadable: return "unloadable";
    case errc::dlopen_failed: return "dlopen_failed";
    case errc::missing_descriptor: return "missing_descriptor";
    case errc::abi_mismatch: return "abi_mismatch";
    case errc::factory_failed: return "factory_failed";
    case errc::old_version_in_use: return "old_version_in_use";
    case errc::purge_timeout: return "purge_timeout";
    case errc::no_such_module: return "no_such_module";
    case errc::too_large: return "too_large";
  }
  return "?";
}

std::string error::message() const { return herd::detail::code_and_detail(to_string(code), detail); }

}  // namespace herd::modules
