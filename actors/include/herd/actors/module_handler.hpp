// What a hot-swappable module exports: a handler class and one C-ABI
// descriptor, written by HERD_MODULE.
//
//   // my_handler.cpp, built with herd_add_module(my_handler_v2 my_handler.cpp)
//   #include <herd/actors/module_handler.hpp>
//   struct my_handler : app::connection_api {        // an interface the host knows
//     std::string export_state() override { ... }    // bytes for the next version
//     void code_change(std::string_view from, std::string state) override { ... }
//   };
//   HERD_MODULE(my_handler, "my_handler", "2", "1")  // name, version, upgrade_from...
//
// The host reaches handlers only through an interface: an abstract class
// derived from herd::handler that declares `using herd_interface = itself;`,
// in a header shared by host and module (herd's net layer defines one for
// connections; a test defines its own). The descriptor records which interface
// the handler implements (by a hash of the interface's name, like message
// types), so the host never needs RTTI across the module boundary.
//
// State crosses versions as bytes (a std::string), never as a C++ type of the
// old version: v2 cannot name v1's types without breaking the one-definition
// rule, and v1's code may be gone by the time v2 reads them. A versioned
// C-layout struct copied into the string is fine.
//
// A handler class may declare `static constexpr bool never_switch = true;`:
// a running handler of that version keeps its version until it ends, even
// when a newer version lists it in upgrade_from.
#pragma once
#include <herd/actors/message.hpp>  // type_id / type_name
#include <herd/actors/module_abi.hpp>
#include <herd/actors/module_anchor.hpp>

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace herd {

// The base of every handler. Its members run in the process that owns the
// handler (the host calls them there), never concurrently.
class handler {
 public:
  using herd_interface = handler;

  virtual ~handler() = default;

  // Called on the running (old) handler when its actor switches versions:
  // everything the next version needs, as bytes. Default: nothing.
  virtual std::string export_state() { return {}; }

  // Called on a freshly made handler of the new version instead of a fresh
  // start: `from_version` is the old one's version string, `state` what its
  // export_state returned. An exception ends the switch: the old handler
  // stays, and modules::upgrade throws module_error (a net::module_protocol
  // connection logs it and goes on with the old version). Default: ignore
  // the state.
  virtual void code_change(std::string_view from_version, std::string state) {
    (void)from_version;
    (void)state;
  }
};

namespace detail {

// Per module, in the module's memory (defined by HERD_MODULE, hidden). refs
// counts everything that keeps the module's code needed: handlers made from
// it, its messages, its continuations, and the registry while it is current.
struct module_anchor {
  std::atomic<int64_t> refs{0};
  // The host's record of this loaded copy (opaque here); written by the
  // loader right after dlopen, before any handler exists.
  std::atomic<void*> version{nullptr};
};

inline constexpr uint32_t module_flag_never_switch = 1;

// The C-ABI descriptor (`herd_module_descriptor_v1`). Grow it only at the
// end; struct_size tells the loader which fields exist.
struct module_descriptor {
  uint32_t struct_size;
  uint32_t flags;                // module_flag_*
  uint64_t abi_hash;             // module_abi_hash as the module saw it
  const char* abi_text;          // HERD_MODULE_ABI_TEXT, for the error message
  const char* name;
  const char* version;
  const char* const* upgrade_from;
  uint32_t upgrade_from_count;
  uint32_t interface_name_len;
  uint64_t interface_id;         // type_id of Handler::herd_interface
  const char* interface_name;    // not NUL-terminated
  handler* (*create)();          // may throw; called in the process that will own it
  module_anchor* anchor;
};

template <class H>
constexpr uint32_t module_flags() {
  if constexpr (requires { H::never_switch; }) return H::never_switch ? module_flag_never_switch : 0;
  else return 0;
}

template <class H>
handler* module_create() {
  return new H();
}

}  // namespace detail
}  // namespace herd

// Tests build a module with a wrong hash on purpose.
#ifdef HERD_MODULE_ABI_OVERRIDE
#define HERD_MODULE_ABI_VALUE_ (static_cast<uint64_t>(HERD_MODULE_ABI_OVERRIDE))
#else
#define HERD_MODULE_ABI_VALUE_ (::herd::detail::module_abi_hash)
#endif

// Once per module, at namespace scope in one of its source files. Handler must
// be default-constructible and derive from its interface; the trailing
// arguments are the versions whose state it takes (string literals).
#define HERD_MODULE(Handler, module_name, module_version, ...)                                       \
  static_assert(std::is_base_of_v<::herd::handler, Handler>, "HERD_MODULE: not a herd::handler");    \
  static_assert(std::is_base_of_v<typename Handler::herd_interface, Handler>);                        \
  extern "C" {                                                                                      \
  __attribute__((visibility("hidden"))) ::herd::detail::module_anchor herd_module_anchor_v1{};      \
  }                                                                                                 \
  namespace herd_module_generated_ {                                                                \
  static const char* const upgrade_from[] = {"" __VA_OPT__(, ) __VA_ARGS__};                        \
  }                                                                                                 \
  extern "C" __attribute__((visibility("default"))) const ::herd::detail::module_descriptor        \
      herd_module_descriptor_v1 = {                                                                 \
          sizeof(::herd::detail::module_descriptor),                                                \
          ::herd::detail::module_flags<Handler>(),                                                  \
          HERD_MODULE_ABI_VALUE_,                                                                   \
          HERD_MODULE_ABI_TEXT,                                                                     \
          module_name,                                                                              \
          module_version,                                                                           \
          herd_module_generated_::upgrade_from + 1,                                                 \
          static_cast<uint32_t>(sizeof(herd_module_generated_::upgrade_from) /                      \
                                    sizeof(herd_module_generated_::upgrade_from[0]) -               \
                                1),                                                                 \
          static_cast<uint32_t>(::herd::detail::type_name<typename Handler::herd_interface>().size()), \
          ::herd::detail::type_id<typename Handler::herd_interface>,                                \
          ::herd::detail::type_name<typename Handler::herd_interface>().data(),                     \
          &::herd::detail::module_create<Handler>,                                                  \
          &herd_module_anchor_v1}
