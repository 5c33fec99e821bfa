// Which loaded module a piece of code belongs to, known statically.
//
// Every module built with herd_add_module defines `herd_module_anchor_v1`
// (HERD_MODULE does it) with hidden visibility; everywhere else — the host
// executable, herd's own libraries — the weak declaration below resolves to
// null. A template instantiated in a module (make_message<T>,
// make_heap_body<F>) therefore sees its module's anchor, and the same template
// in the host sees nullptr: the envelope or continuation it makes holds a
// reference on the module exactly when its code (a destructor, a vtable) lives
// there. Host code pays one load and a predictable branch.
//
// The anchor holds the module's reference count; see actors/src/code/module_registry.cpp.
#pragma once

namespace herd::detail {
struct module_anchor;
// From module code only (the count is already above zero: the caller runs
// under a reference). Any thread.
void module_retain(module_anchor* a) noexcept;
// Any thread, after the code that the reference protected has returned.
// Dropping the last reference of a version that is no longer current
// schedules its dlclose.
void module_release(module_anchor* a) noexcept;
}  // namespace herd::detail

extern "C" {
extern herd::detail::module_anchor herd_module_anchor_v1 __attribute__((weak, visibility("hidden")));
}

namespace herd::detail {
// nullptr in the host; this module's anchor in module code.
inline module_anchor* this_module() noexcept { return &herd_module_anchor_v1; }
}  // namespace herd::detail
