// Hot code loading, the module layer: load handler modules (shared objects
// built with herd_add_module), make handlers from the current version, switch
// a running handler to a newer version at a point its owner chooses, and
// unload a version once nothing needs its code. Erlang's code server, for
// C++: per module name a current and an old version.
//
//   herd::modules::set_module_dir("/srv/app/modules");     // once, any thread
//   auto r = herd::modules::load("greeter.so");            // from a process
//   if (!r) log(r.error().message());                       // says why; current untouched
//   auto h = herd::modules::create<app::greeter>("greeter");
//   h->greet("joe");
//   ...at a message boundary, in the process that owns h:
//   if (h.outdated()) herd::modules::upgrade(h);            // export_state -> code_change
//
// Rules (see "Hot swap" in docs/design.md for the why):
//  * load copies the file into a private staging directory as
//    <stem>.<content-hash>.so and dlopens the copy RTLD_NOW | RTLD_LOCAL on
//    the blocking pool. The new version becomes current; the previous one
//    becomes old and is dlclosed once nothing references it. A third load
//    while the old version is still referenced is refused (purge_mode::soft),
//    or its actors are killed first (purge_mode::kill), as code:purge does.
//    Deploy by rename: never overwrite a file the node may be reading.
//  * Only files in the module directory, and neither file nor directory
//    writable by anyone but this process's user (or root), are loaded.
//  * What keeps a version loaded: each handler made from it (until the
//    handler_ref is destroyed), each message made by its code (until
//    consumed or dropped: send_after's timers included), each hibernate
//    continuation made by its code, each process spawned by its code (until
//    the function it runs is destroyed), and being current.
//  * Not tracked: values that carry module code pointers — std::function, shared_ptr control
//    blocks, objects with virtual functions — kept by the host after the
//    message or handler that brought them is gone.
#pragma once
#include <herd/actors/message.hpp>
#include <herd/actors/module_handler.hpp>
#include <herd/actors/pid.hpp>
#include <herd/actors/result.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace herd {

// create / upgrade failures (the module's own exception is turned into this
// one, with its type and what(), so nothing thrown points into module code).
class module_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace modules {

// Why a load or unload was refused. The current version is untouched.
enum class errc : uint8_t {
  no_module_dir,        // set_module_dir was never called
  file_missing,
  outside_module_dir,
  unsafe_permissions,   // file or directory writable by others, or owned by another user
  io_error,             // reading the file or writing the staged copy
  not_a_shared_object,
  unloadable,           // GNU unique symbols or thread_local destructors
  dlopen_failed,
  missing_descriptor,
  abi_mismatch,
  factory_failed,
  old_version_in_use,   // soft purge refused
  purge_timeout,        // killed the old version's actors, something still holds it
  no_such_module,       // unload of a name never loaded
  too_large,            // bigger than load_options::max_file_size (refused before it is read)
};

// Any thread. "file_missing", ...
const char* to_string(errc e) noexcept;

struct error {
  errc code;
  std::string detail{};  // why, for a human ("greeter.so: no such file")
  // "file_missing: greeter.so: no such file"
  std::string message() const;
};

template <class T = herd::ok>
using result = herd::result<T, error>;

// What load and unload did: the module's name and the version loaded (load)
// or made old (unload).
struct loaded {
  std::string module;
  std::string version;
};

enum class purge_mode {
  soft,  // refuse while the old version is referenced (the default)
  kill,  // kill the actors running the old version, wait, then go on
};

struct load_options {
  purge_mode purge = purge_mode::soft;
  // With purge_mode::kill: how long to wait for the old version's references
  // (its actors' handlers, its messages) to go after the kill.
  std::chrono::milliseconds purge_timeout{5000};
  // A bigger file is refused before it is read (it is read into memory once,
  // for the checks and the staged copy). Handler modules are a few MiB.
  uint64_t max_file_size = uint64_t(256) << 20;
};

// Any thread. The only directory modules are loaded from (made absolute;
// symlinks resolved at load).
void set_module_dir(std::string dir);
std::string module_dir();

// From a process (runs the file work and dlopen on the blocking pool; a
// purge waits in the process). From a foreign thread it runs inline. `path`
// is a file directly in the module directory: absolute, or relative to the
// module directory (never to the working directory). One handler is made and
// destroyed as a check of the factory.
result<loaded> load(const std::string& path, const load_options& o = {});

// From a process, or from a foreign thread (inline), as load. Makes `name`'s
// current version old (no new handlers; the running ones go on), with the
// same purge rules as load. The version is
// dlclosed once unreferenced.
result<loaded> unload(const std::string& name, const load_options& o = {});

struct version_info {
  std::string name;
  std::string version;
  std::string state;        // "current", "old", "loading", "unloading"
  std::string path;         // the file it was loaded from
  std::string staged_path;  // the copy that is mapped
  std::vector<std::string> upgrade_from;
  bool never_switch = false;
  int64_t refs = 0;         // everything keeping it loaded (being current counts 1)
  std::vector<pid> actors;  // processes holding handlers of it
  // Handlers that failed to switch to this version (export_state, the
  // factory or code_change threw) and stayed on theirs; the last reason.
  uint64_t switch_failures = 0;
  std::string last_switch_failure;
};

// Any thread. Every version still loaded (or being loaded/unloaded).
std::vector<version_info> list();

// Sent to each process that watches a handler (handler_ref::watch) of a
// version when that version stops being current: a newer one was loaded, or
// the module was unloaded. A host type: it holds no module reference.
struct code_changed {
  std::string module;
};

}  // namespace modules

namespace detail {
struct module_version;
struct handler_slot {
  handler* h = nullptr;
  module_version* v = nullptr;
  const std::atomic<bool>* superseded = nullptr;  // the version's flag
  pid owner{};
  bool watched = false;  // owner gets modules::code_changed (handler_ref::watch)
  uint64_t refused = 0;  // serial of the version a switch to failed: not tried again
};
handler_slot create_handler(std::string_view name, uint64_t interface_id, std::string_view interface_name);
void destroy_handler(handler_slot& s) noexcept;
bool upgrade_handler(handler_slot& s);
void watch_handler(handler_slot& s);
std::string_view handler_module(const handler_slot& s) noexcept;
std::string_view handler_version(const handler_slot& s) noexcept;
}  // namespace detail

// Owns one handler and a reference on its module version. Move-only; used by
// the process that made it (its pid is what purge kills).
template <class I>
class handler_ref {
 public:
  handler_ref() = default;
  handler_ref(handler_ref&& o) noexcept : s_(std::exchange(o.s_, {})) {}
  handler_ref& operator=(handler_ref&& o) noexcept {
    if (this != &o) {
      reset();
      s_ = std::exchange(o.s_, {});
    }
    return *this;
  }
  ~handler_ref() { reset(); }

  I* get() const noexcept { return static_cast<I*>(s_.h); }
  I* operator->() const noexcept { return get(); }
  I& operator*() const noexcept { return *get(); }
  explicit operator bool() const noexcept { return s_.h != nullptr; }

  std::string_view module() const noexcept { return detail::handler_module(s_); }
  std::string_view version() const noexcept { return detail::handler_version(s_); }

  // True once another version of the module became current (or the module
  // was unloaded). One relaxed load: cheap enough for every message boundary.
  bool outdated() const noexcept { return s_.superseded && s_.superseded->load(std::memory_order_relaxed); }

  // From the owning process: it gets a modules::code_changed when this
  // handler's version stops being current (at once if it already has), and
  // so does it for the versions upgrade() moves the handler to. For an owner
  // that sleeps (hibernates) with the handler: the notice wakes it to
  // upgrade, so an idle process does not keep an old version loaded (BEAM's
  // code-change signal). The owner must take the message from its mailbox.
  void watch() { detail::watch_handler(s_); }

  // Destroys the handler, then drops the reference.
  void reset() noexcept {
    if (s_.h) detail::destroy_handler(s_);
  }

  // For modules::upgrade and create.
  detail::handler_slot& slot() noexcept { return s_; }
  explicit handler_ref(detail::handler_slot s) noexcept : s_(s) {}

 private:
  detail::handler_slot s_;
};

namespace modules {

// From a process: a new handler of `name`'s current version, which must
// implement interface I. Throws module_error (no such module, another
// interface, or the factory threw).
template <class I>
handler_ref<I> create(std::string_view name) {
  static_assert(std::is_base_of_v<handler, I>);
  return handler_ref<I>(detail::create_handler(name, detail::type_id<typename I::herd_interface>,
                                               detail::type_name<typename I::herd_interface>()));
}

// From the process that owns h, at a point where nothing of the handler is
// on the stack. If the current version lists h's version in upgrade_from
// (and h's version is not never_switch): h's export_state(), a new handler,
// its code_change(from, state), then the old handler is destroyed; returns
// true. Otherwise false and h is untouched. If export_state, the factory or
// code_change throws, h is untouched, module_error is thrown, the failure is
// counted on the new version (version_info::switch_failures) and h does not
// try that version again (a later upgrade returns false until yet another
// version is loaded). The caller chooses: let it end the actor, or catch it
// and go on with the old version — net::module_protocol does that.
template <class I>
bool upgrade(handler_ref<I>& h) {
  return detail::upgrade_handler(h.slot());
}

}  // namespace modules
}  // namespace herd
