// herd::ok: the value of a success that carries nothing — an empty reply to
// a call (what a herd::server's handle_call that returns void replies), and
// the value of a herd::result<> (OTP's bare `ok`).
#pragma once

namespace herd {

struct ok {
  friend bool operator==(ok, ok) = default;
};

}  // namespace herd
