// Debug types for tools/gdb/herd.py. The extension reads herd's internal
// structures (process control blocks, the process table, workers) through
// gdb's type information. A build with debug info everywhere (RelWithDebInfo,
// Debug, or the sanitizer builds, which add -g) has them already; a Release
// build without -g does not. Compiling this one file with -g into the
// executable (it defines nothing but one unused anchor) puts exactly those types in
// its debug info, with the layout of this very build:
//
//   target_sources(my_node PRIVATE ${herd_SOURCE_DIR}/tools/gdb/herd_gdb_types.cpp)
//   set_source_files_properties(.../herd_gdb_types.cpp PROPERTIES COMPILE_OPTIONS -g)
//   target_include_directories(my_node PRIVATE .../actors/src .../runtime/src)
//
// The globals the extension starts from (g_node, g_runtime) are found by
// their ELF symbols, which an unstripped Release binary keeps.
#include "node_state.hpp"
#include "process.hpp"
#include "process_table.hpp"
#include "names.hpp"
#include "runtime_impl.hpp"
#include "sched/worker.hpp"

namespace herd::gdb_types {

struct anchor {
  detail::node_state* node;
  detail::process_table* table;
  detail::process* process;
  detail::interned_name* name;
  detail::mailbox* mbox;
  rt::runtime_impl* runtime;
  rt::worker* worker;
  rt::switch_side* side;
  rt::fiber* fiber;
};

}  // namespace herd::gdb_types

// Unused; its type pulls every type above into the debug info.
[[gnu::used]] herd::gdb_types::anchor herd_gdb_types_anchor{};
