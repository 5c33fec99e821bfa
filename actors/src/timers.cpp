#include <herd/actors/send.hpp>
#include <herd/actors/timers.hpp>
#include <herd/runtime/alloc.hpp>
#include <herd/runtime/clock.hpp>

#include "node_state.hpp"

#include <new>
#include <string>
#include <string_view>

namespace herd::detail {
namespace {

struct pending_send {
  pid to;
  message* m;
};

void fire(void* a) {
  auto* ps = static_cast<pending_send*>(a);
  deliver(ps->to, ps->m);
  ps->~pending_send();
  alloc::deallocate(ps);
}

void drop(void* a) {
  auto* ps = static_cast<pending_send*>(a);
  destroy_message(ps->m);
  ps->~pending_send();
  alloc::deallocate(ps);
}

// By name: resolved when it fires (deliver drops it if the name is free).
struct pending_named_send {
  std::string name;
  message* m;
};

void fire_named(void* a) {
  auto* ps = static_cast<pending_named_send*>(a);
  deliver(std::string_view(ps->name), ps->m);
  delete ps;
}

void drop_named(void* a) {
  auto* ps = static_cast<pending_named_send*>(a);
  destroy_message(ps->m);
  delete ps;
}

}  // namespace

timer_ref send_after_impl(std::chrono::milliseconds delay, std::string_view name, message* m) {
  if (!current_node()) {  // no runtime to hold the timer (it dereferenced none): dropped, as send drops
    destroy_message(m);
    return {};
  }
  pending_named_send* ps;
  try {
    ps = new pending_named_send{std::string(name), m};
  } catch (...) {
    destroy_message(m);
    throw;
  }
  return rt::schedule_timer(rt::deadline_after(delay), &fire_named, &drop_named, ps);
}

timer_ref send_after_impl(std::chrono::milliseconds delay, pid to, message* m) {
  if (!current_node()) {
    destroy_message(m);
    return {};
  }
  auto* ps = new (alloc::allocate(sizeof(pending_send))) pending_send{to, m};
  return rt::schedule_timer(rt::deadline_after(delay), &fire, &drop, ps);
}

}  // namespace herd::detail
