// The process layer's error, for the herd::result of its calls that can fail
// in normal operation (stop_server). The other layers have their own:
// net::error, supervisor::error, modules::error.
#pragma once
#include <herd/actors/result.hpp>

#include <cstdint>
#include <string>

namespace herd {

enum class errc : uint8_t {
  timeout,  // the process did not do it in time (stop_server: it has not exited)
};

// Any thread. "timeout".
const char* to_string(errc e) noexcept;

struct error {
  errc code;
  std::string detail{};  // what was being done ("stop_server <0.12.0>")
  // "timeout: stop_server <0.12.0>: still alive after 30 ms"
  std::string message() const;
};

}  // namespace herd
