// send: put a value in a process's mailbox. Never blocks, never fails: a send
// to a dead or unknown process is dropped, as in Erlang. Messages from one
// sender to one receiver arrive in the order sent. Counts a reduction, so a
// process that only sends is still preempted.
#pragma once
#include <herd/actors/detail/body.hpp>
#include <herd/actors/message.hpp>
#include <herd/actors/pid.hpp>

#include <string_view>
#include <type_traits>
#include <utility>

namespace herd {

namespace detail {
// Takes ownership of m. Returns false if nobody received it.
bool deliver(pid to, message* m) noexcept;
bool deliver(std::string_view name, message* m) noexcept;
}  // namespace detail

// Any thread. The message's type is the value's decayed type; a C string
// (`send(p, "hello")`) travels as std::string.
template <class T>
void send(pid to, T&& value) {
  detail::deliver(to, detail::make_message<detail::message_type_t<T>>(std::forward<T>(value)));
}

// Any thread. False if no process is registered under `name` (Erlang raises
// badarg there; herd lets you decide).
template <class T>
bool send(std::string_view name, T&& value) {
  return detail::deliver(name, detail::make_message<detail::message_type_t<T>>(std::forward<T>(value)));
}

// Constructs the message in place.
template <class T, class... Args>
void send_new(pid to, Args&&... args) {
  detail::deliver(to, detail::make_message<T>(std::forward<Args>(args)...));
}

}  // namespace herd
