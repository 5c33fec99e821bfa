// SHA-1 (FIPS 180-4), only for Sec-WebSocket-Accept: RFC 6455 fixes the
// hash, and 60 lines here spare every herd user a libcrypto dependency.
// Not for anything that needs collision resistance.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace herd::ws::detail {

std::array<uint8_t, 20> sha1(std::string_view data) noexcept;
std::string base64(const uint8_t* p, std::size_t n);
// The number of bytes `s` decodes to, or -1 when it is not canonical base64.
int base64_decoded_size(std::string_view s) noexcept;

}  // namespace herd::ws::detail
