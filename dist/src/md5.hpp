// MD5 (RFC 1321), for the distribution handshake's digest only: Erlang's
// challenge/response is MD5(cookie ++ decimal challenge). Not for anything
// that needs a secure hash. Written here because OpenSSL is not a dependency
// of herd and ei's own copy is not part of its public API.
#pragma once
#include <array>
#include <cstdint>
#include <string_view>

namespace herd::dist::detail {

std::array<uint8_t, 16> md5(std::string_view data) noexcept;

}  // namespace herd::dist::detail
