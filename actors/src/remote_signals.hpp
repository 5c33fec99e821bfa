// The link/monitor/exit signals a local process sends to a remote pid go to
// the dist layer's hook (detail/remote.hpp) instead of the message path.
#pragma once
#include <herd/actors/message.hpp>
#include <herd/actors/pid.hpp>

namespace herd::detail {

// True for the signal kinds remote_signal carries.
bool is_remote_signal_kind(uint32_t kind) noexcept;
// Takes m (a signal of such a kind to the remote pid `to`) to the hook.
// True when the hook took it (it answers failures itself).
bool deliver_remote_signal(pid to, message* m) noexcept;

}  // namespace herd::detail
