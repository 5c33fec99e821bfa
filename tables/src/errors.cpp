#include <herd/tables/errors.hpp>

namespace herd::tables {

const char* to_string(errc e) noexcept {
  switch (e) {
    case errc::name_taken: return "name_taken";
    case errc::not_alive: return "not_alive";
    case errc::already_owner: return "already_owner";
    case errc::not_joined: return "not_joined";
  }
  return "unknown";
}

std::string error::message() const { return herd::detail::code_and_detail(to_string(code), detail); }

}  // namespace herd::tables
