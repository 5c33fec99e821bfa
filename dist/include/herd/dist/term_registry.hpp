// Which C++ types can cross a node boundary through herd::send. A send to a
// remote pid reaches the distribution layer as a type-erased message (its
// type id and name); the layer turns it into a term with the encoder
// registered here for that type id, then into the external term format.
//
// HERD_TERM_RECORD types register themselves (every file that sees the
// declaration holds a registration); herd::term and herd::dist::etf need
// none. A type mapped by a herd::term_mapping specialization calls
// herd::enable_remote_send<T>() once before sending. A type with no encoder
// is not sent: the send is dropped with a logged error naming the type.
#pragma once
#include <herd/actors/message.hpp>
#include <herd/dist/term.hpp>

#include <cstdint>

namespace herd {

template <class T>
struct term_mapping;

namespace detail {

using term_encoder = term (*)(const void* value);

// Any thread. add: one more holder of `type`'s encoder; !add: one fewer (the
// last one removes it, so a type from an unloaded module goes with it).
void register_term_encoder(uint64_t type, term_encoder enc, bool add) noexcept;
// Any thread; nullptr when `type` has none.
term_encoder find_term_encoder(uint64_t type) noexcept;

template <class T>
term encode_as_term(const void* v) {
  return term_mapping<T>::to(*static_cast<const T*>(v));
}

template <class T>
struct term_encoder_registration {
  term_encoder_registration() noexcept { register_term_encoder(type_id<T>, &encode_as_term<T>, true); }
  ~term_encoder_registration() { register_term_encoder(type_id<T>, &encode_as_term<T>, false); }
  term_encoder_registration(const term_encoder_registration&) = delete;
  term_encoder_registration& operator=(const term_encoder_registration&) = delete;
};

}  // namespace detail

// For a type with a herd::term_mapping specialization: lets herd::send to a
// remote pid encode it (idempotent; any thread).
template <class T>
void enable_remote_send() {
  static const detail::term_encoder_registration<T> registered;
}

}  // namespace herd
