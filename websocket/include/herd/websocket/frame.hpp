// RFC 6455 framing vocabulary and the frame writer (sans-I/O: bytes are
// appended to a string the caller owns and writes when it likes).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace herd::ws {

enum class opcode : uint8_t { continuation = 0, text = 1, binary = 2, close = 8, ping = 9, pong = 10 };

// Close codes (RFC 6455 7.4.1) used by herd.
namespace close_code {
inline constexpr uint16_t normal = 1000;
inline constexpr uint16_t going_away = 1001;      // drain
inline constexpr uint16_t protocol_error = 1002;
inline constexpr uint16_t unsupported = 1003;     // e.g. binary where only text is accepted
inline constexpr uint16_t no_status = 1005;       // a close frame without a code (never sent)
inline constexpr uint16_t abnormal = 1006;        // no close frame at all (never sent)
inline constexpr uint16_t invalid_payload = 1007; // text that is not UTF-8
inline constexpr uint16_t policy = 1008;          // slow consumer
inline constexpr uint16_t too_big = 1009;         // over max_message
inline constexpr uint16_t internal_error = 1011;
}  // namespace close_code

// Whether a peer may send `code` in a close frame: 1000-1003, 1007-1014
// (1012-1014 are registered with IANA since RFC 6455) and 3000-4999.
// 1004-1006, 1015 and everything else are refused with 1002.
bool valid_close_code(uint16_t code) noexcept;

// Appends one frame. A server's frames are unmasked (mask = nullopt); a
// client's carry a mask key (tests and in-memory clients use it). No checks:
// a control frame over 125 bytes or a fragmented one is written as asked
// (tests need to send bad frames).
void write_frame(std::string& out, opcode op, std::string_view payload, bool fin = true,
                 std::optional<uint32_t> mask = std::nullopt, uint8_t rsv = 0);
// A close frame with `code` and `reason` (cut to fit the 125-byte limit).
void write_close(std::string& out, uint16_t code, std::string_view reason = {},
                 std::optional<uint32_t> mask = std::nullopt);

}  // namespace herd::ws
