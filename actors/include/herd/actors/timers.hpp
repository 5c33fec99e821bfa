// Timers that deliver messages: send_after puts `value` in `to`'s mailbox after
// `delay` unless cancelled first. The timer runs on the worker that set it;
// cancellation from any process or thread is lazy (the entry is dropped when
// its slot comes due or the wheel compacts), and the message is freed at once.
#pragma once
#include <herd/actors/message.hpp>
#include <herd/actors/pid.hpp>
#include <herd/runtime/timer.hpp>

#include <chrono>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>

namespace herd {

using timer_ref = rt::timer_ref;

namespace detail {
timer_ref send_after_impl(std::chrono::milliseconds delay, pid to, message* m);
timer_ref send_after_impl(std::chrono::milliseconds delay, std::string_view name, message* m);
}

// Any thread. As with send, a C string travels as std::string. With no node
// running nothing could receive it: the message is dropped, as send drops
// it, and the timer_ref is empty (cancel_timer false, read_timer -1).
template <class T>
timer_ref send_after(std::chrono::milliseconds delay, pid to, T&& value) {
  return detail::send_after_impl(delay, to, detail::make_message<detail::message_type_t<T>>(std::forward<T>(value)));
}

// By registered name, as OTP's erlang:send_after(Time, Name, Msg): the name
// is looked up when the timer fires, and the message is dropped if nothing is
// registered under it then (OTP gives no error either).
template <class T>
timer_ref send_after(std::chrono::milliseconds delay, std::string_view name, T&& value) {
  return detail::send_after_impl(delay, name, detail::make_message<detail::message_type_t<T>>(std::forward<T>(value)));
}

// Any thread. True if the timer had not fired yet and now never will.
inline bool cancel_timer(const timer_ref& t) noexcept { return rt::cancel_timer(t); }

// Any thread. Milliseconds left, or -1 if the timer fired or was cancelled.
inline int64_t read_timer(const timer_ref& t) noexcept { return rt::timer_remaining(t); }

}  // namespace herd
