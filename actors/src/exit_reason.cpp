#include <herd/actors/exit_reason.hpp>

namespace herd {

std::string exit_reason::to_string() const {
  switch (kind_) {
    case exit_kind::normal: return "normal";
    case exit_kind::shutdown: return what_.empty() ? "shutdown" : "{shutdown, " + what_ + "}";
    case exit_kind::kill: return "kill";
    case exit_kind::killed: return "killed";
    case exit_kind::noproc: return "noproc";
    case exit_kind::noconnection: return "noconnection";
    case exit_kind::error: return "{error, " + type_ + ": " + what_ + "}";
  }
  return "?";
}

}  // namespace herd
