#include <herd/actors/send.hpp>
#include <herd/actors/timers.hpp>
#include <herd/runtime/alloc.hpp>
#include <herd/runtime/clock.hpp>

#include <new>

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

}  // namespace

timer_ref send_after_impl(std::chrono::milliseconds delay, pid to, message* m) {
  auto* ps = new (alloc::allocate(sizeof(pending_send))) pending_send{to, m};
  return rt::schedule_timer(rt::deadline_after(delay), &fire, &drop, ps);
}

}  // namespace herd::detail
