// The file side of a load: where a module may come from, and the private copy
// that is actually dlopened.
//
//  * A candidate must be a regular file directly in the module directory
//    (after resolving symlinks), and neither it nor the directory may be
//    writable by group or others or owned by another user than this process's
//    (root is accepted as owner). Whoever can write there can run code in the
//    node.
//  * Its type and size are checked from the name (lstat) before it is opened
//    (a FIFO would block the open for ever; a file over the size cap is
//    never read), again on the open descriptor, then its ELF header is read
//    and checked before the rest.
//  * It is read once, into memory: the checks, the content hash, the ELF
//    inspection and the staged copy all see the same bytes, whatever happens
//    to the file meanwhile.
//  * The copy goes to a private directory (mode 0700, made with mkdtemp) as
//    <stem>.<content-hash>.so, written to a temporary name and renamed into
//    place. dlopen of a path that is already loaded returns the loaded copy,
//    so a name still used by a loaded version is never reused: the registry
//    asks for a suffix then (<stem>.<hash>.<n>.so).
#pragma once
#include <herd/actors/module.hpp>

#include <string>
#include <string_view>

namespace herd::detail::staging {

struct candidate {
  std::string path;   // resolved, absolute
  std::string stem;   // file name without a trailing ".so"
  std::string bytes;  // the whole file
};

// Blocking (file I/O): from the blocking pool. On failure returns the error
// (code and message) and leaves `out` unspecified.
// A refused load saying why.
modules::error load_error(modules::errc c, std::string msg);

// `path`: absolute, or relative to the module directory.
modules::result<> read_candidate(const std::string& path, const std::string& module_dir, uint64_t max_size,
                                 candidate& out);

// 16 hex digits of a 64-bit FNV-1a over the bytes. Names copies; not a
// security measure (the directory checks are).
std::string content_hash(std::string_view bytes);

// Blocking. The private staging directory, made on first use (in $TMPDIR,
// else /tmp, after remove_stale_staging_dirs there); "" and `error` set on
// failure. Any thread (internally locked).
std::string staging_dir(std::string& error);

// Blocking. Removes the staging directories in `parent` that nodes which
// are gone left behind (killed before their atexit ran): named
// herd-modules-<pid>-XXXXXX, a directory (not a symlink) owned by this
// process's user, and <pid> not running, or running but not the node that
// made it (its .owner record — boot id and process start ticks — differs:
// the pid was reused, or the machine rebooted). Their files are unlinked
// without following links. staging_dir calls it once, before making ours.
void remove_stale_staging_dirs(const std::string& parent) noexcept;

// Blocking. Writes bytes to dir/name (mode 0500) through a temporary file and
// rename. Returns "" on success, else the error.
std::string write_staged(const std::string& dir, const std::string& name, std::string_view bytes);

// Blocking. Removes the staging directory and what is left in it (at process
// exit; mapped copies stay mapped).
void remove_staging_dir() noexcept;

}  // namespace herd::detail::staging
