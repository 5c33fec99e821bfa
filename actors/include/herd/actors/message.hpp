// Messages: any movable C++ type, carried in a type-erased envelope with the
// value stored inline after the header (one allocation per message).
//
// A message's type is identified by a compile-time 64-bit hash of the type's
// name as the compiler spells it — not by the address of a static tag (it
// differs between the host and a dlopen'ed module) and not by typeid ==
// (a string compare on every miss in a selective receive). As with mangled
// names, two types in anonymous namespaces of different files can share a
// name: give message types a named namespace.
#pragma once
#include <herd/actors/module_anchor.hpp>
#include <herd/runtime/alloc.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace herd::detail {

constexpr uint64_t fnv1a(std::string_view s) noexcept {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

template <class T>
constexpr std::string_view type_name() noexcept {
  std::string_view p = __PRETTY_FUNCTION__;
  // "... type_name() [with T = foo::bar; std::string_view = ...]"
  auto b = p.find("T = ") + 4;
  auto e = p.find_first_of(";]", b);
  return p.substr(b, e - b);
}

template <class T>
inline constexpr uint64_t type_id = fnv1a(type_name<std::remove_cvref_t<T>>());

// What a value passed to send (and send_after, cast, call, reply) travels
// as: its decayed type, except that a C string (a literal, a char array, a
// char*) travels as std::string — a `const char*` message would match no
// `const std::string&` handler and sit in the mailbox, and would point into
// the sender's memory besides.
template <class T>
inline constexpr bool is_c_string = std::is_same_v<std::decay_t<T>, const char*> || std::is_same_v<std::decay_t<T>, char*>;
template <class T>
using message_type_t = std::conditional_t<is_c_string<T>, std::string, std::decay_t<T>>;

struct message_ops {
  void (*destroy)(void* payload) noexcept;  // nullptr: nothing to run (a trivially destructible type)
  const char* name;    // the type's name, for traces and the observer;
  uint32_t name_len;   // not NUL-terminated
  uint32_t size;
  // The module whose code `destroy` is (see module_anchor.hpp); nullptr for
  // the host's own types. A message made by module code holds a reference on
  // it until destroyed.
  module_anchor* owner = nullptr;
};

struct message_link {
  std::atomic<message_link*> next{nullptr};
};

// Header of every message; the value follows at `payload_offset`.
struct message : message_link {
  uint64_t type = 0;
  const message_ops* ops = nullptr;
  uint32_t kind = 0;  // 0: a user message; others: runtime signals
  uint32_t reserved = 0;

  static constexpr std::size_t payload_offset = 32;
  void* payload() noexcept { return reinterpret_cast<char*>(this) + payload_offset; }
  const void* payload() const noexcept { return reinterpret_cast<const char*>(this) + payload_offset; }
  template <class T>
  T& as() noexcept { return *std::launder(static_cast<T*>(payload())); }
};
static_assert(sizeof(message) <= message::payload_offset);

template <class T>
struct ops_holder {
  static void destroy(void* p) noexcept { static_cast<T*>(p)->~T(); }
  static constexpr message_ops ops{std::is_trivially_destructible_v<T> ? nullptr : &destroy, type_name<T>().data(),
                                   static_cast<uint32_t>(type_name<T>().size()),
                                   static_cast<uint32_t>(sizeof(T)), &::herd_module_anchor_v1};
};

// Counts live messages (leak check at node teardown); relaxed, any thread.
void count_message(int delta) noexcept;

// A message envelope of `bytes` (header and value), counted as live. Small
// envelopes come from the calling thread's cache of freed ones (no allocator
// call), others from alloc::allocate. Any thread; throws std::bad_alloc.
void* allocate_message(std::size_t bytes);
// Gives back an envelope from allocate_message whose value was never built
// (its constructor threw). Any thread.
void free_message_memory(void* mem, std::size_t bytes) noexcept;

template <class T, class... Args>
message* make_message(Args&&... args) {
  static_assert(alignof(T) <= 16, "herd: message types must not need more than 16-byte alignment");
  static_assert(std::is_move_constructible_v<T> || std::is_copy_constructible_v<T>);
  void* mem = allocate_message(message::payload_offset + sizeof(T));
  auto* m = new (mem) message;
  try {
    new (m->payload()) T(std::forward<Args>(args)...);
  } catch (...) {
    free_message_memory(mem, message::payload_offset + sizeof(T));
    throw;
  }
  m->type = type_id<T>;
  m->ops = &ops_holder<T>::ops;
  if (__builtin_expect(ops_holder<T>::ops.owner != nullptr, 0)) module_retain(ops_holder<T>::ops.owner);
  return m;
}

// Destroys the value and frees the envelope. Any thread.
void destroy_message(message* m) noexcept;

}  // namespace herd::detail
