// spawn: start a process running fn(args...). The arguments are copied or
// moved into the new process. From a process, the child runs at once until it
// first blocks and the caller continues after that (depth-first), so spawn is
// a scheduling point — like send and receive, never call it holding a
// std::mutex. From a foreign thread the child is queued.
//
// fn returns void, or herd::hibernation (see hibernate.hpp). An exception that
// escapes it becomes the process's exit reason.
#pragma once
#include <herd/actors/detail/body.hpp>
#include <herd/actors/pid.hpp>
#include <herd/runtime/fiber.hpp>

#include <cstddef>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <utility>

namespace herd {

using rt::priority;

// A bound on a process's mailbox, as BEAM's max_heap_size bounds its heap:
// when a message takes the mailbox past `messages`, the process is killed
// (untrappable; it ends `killed`) and/or an error report is logged — the
// spawner chooses. The message is still delivered: the kill arrives behind
// it. A log-only limit logs again once the mailbox has drained below half.
// messages == 0 (the default): no limit, as in BEAM; a mailbox then grows
// for as long as memory lasts (docs/erlang-differences.md says by how much).
struct mailbox_limit {
  std::size_t messages = 0;
  bool kill = true;
  bool log = true;
};

// What a process is, for an operator reading the observer's rows (BEAM has
// no such tag; observer_cli guesses it from the initial call).
enum class process_kind : uint8_t { worker, server, supervisor, acceptor, connection };

struct spawn_options {
  std::size_t stack_size = 0;           // bytes; 0: the node's default (64 KiB)
  std::string_view name{};              // register under this name (must be free)
  priority prio = priority::normal;
  mailbox_limit max_mailbox{};
  // The observer's labels. initial_call names what was spawned (BEAM's
  // initial call); nullptr: the spawned function's C++ type. It is kept as a
  // pointer, never copied: give a string literal (static storage in the host
  // executable or herd — a module's literals go when it is unloaded, so a
  // process spawned by module code records none).
  const char* initial_call = nullptr;
  process_kind kind = process_kind::worker;
  // No stack of its own: the process runs on one of the node's shared slots
  // and, each time it waits, the part of the stack it uses is copied to the
  // heap (back when it runs). For the many processes that mostly wait — a
  // million callers parked in `call` hold ~0.8 KiB each instead of a 4 KiB
  // stack page. Each switch costs a copy of the used depth, and no pointer
  // to its locals may be used by another process or thread while it waits
  // (blocking() is safe: it keeps its slot meanwhile). Only with the node's
  // default stack_size. docs/design.md, "Compact processes".
  bool compact_stack = false;
};

// Thrown by spawn when no process can be created: the node's max_actors is
// reached, no stack can be mapped, or the name is taken.
class spawn_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
struct process;
process* allocate_process(std::size_t body_size);
void* body_storage(process* p) noexcept;
void set_body(process* p, body* b) noexcept;
void discard_process(process* p) noexcept;
pid launch(process* p, const spawn_options& o);
// Records the observer's labels in p, before launch.
void set_labels(process* p, const char* initial_call, process_kind kind) noexcept;
// The spawned function's type, as the compiler spells it in this function's
// __PRETTY_FUNCTION__ ("... [with F = main()::<lambda()>]"): a constant, so
// a spawn pays one pointer store. The observer cuts out the type.
template <class F>
const char* spawn_label() noexcept {
  return __PRETTY_FUNCTION__;
}
// The label a spawn from here records: none from module code (see
// spawn_options::initial_call).
template <class F>
const char* labels_for(const spawn_options& o) noexcept {
  if (__builtin_expect(this_module() != nullptr, 0)) return nullptr;
  return o.initial_call ? o.initial_call : spawn_label<std::decay_t<F>>();
}
}  // namespace detail

namespace detail {
template <class F, class... Args>
process* make_process(F&& fn, Args&&... args) {
  using B = detail::body_impl<std::decay_t<F>, std::decay_t<Args>...>;
  static_assert(alignof(B) <= 16, "herd: over-aligned actor functions are not supported");
  if (__builtin_expect(this_module() != nullptr, 0)) {
    // Spawned by module code: the function is the module's. It goes on the
    // heap inside a host body that holds a reference on the module until it
    // is destroyed, so the version stays loaded while the process runs it.
    detail::process* p = detail::allocate_process(0);
    try {
      void* mem = allocate_body(sizeof(B));
      body* b;
      try {
        b = new (mem) B(std::forward<F>(fn), std::forward<Args>(args)...);
      } catch (...) {
        alloc::deallocate(mem);
        throw;
      }
      body* w = wrap_module_body(b, this_module());
      w->first = true;
      detail::set_body(p, w);
    } catch (...) {
      detail::discard_process(p);
      throw;
    }
    return p;
  }
  detail::process* p = detail::allocate_process(sizeof(B));
  try {
    auto* b = new (detail::body_storage(p)) B(std::forward<F>(fn), std::forward<Args>(args)...);
    b->inline_storage = true;
    detail::set_body(p, b);
  } catch (...) {
    detail::discard_process(p);
    throw;
  }
  return p;
}
}  // namespace detail

// Any thread with a running node.
template <class F, class... Args>
pid spawn(const spawn_options& o, F&& fn, Args&&... args) {
  detail::process* p = detail::make_process(std::forward<F>(fn), std::forward<Args>(args)...);
  detail::set_labels(p, detail::labels_for<F>(o), o.kind);
  return detail::launch(p, o);
}


template <class F, class... Args>
  requires(!std::is_same_v<std::decay_t<F>, spawn_options>)
pid spawn(F&& fn, Args&&... args) {
  return spawn(spawn_options{}, std::forward<F>(fn), std::forward<Args>(args)...);
}

}  // namespace herd
