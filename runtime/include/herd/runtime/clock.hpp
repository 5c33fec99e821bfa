// Time as the runtime sees it: milliseconds since the runtime started. In the
// deterministic mode it is a virtual clock that moves only when every fiber is
// blocked (to the next timer) or when a test advances it.
#pragma once
#include <chrono>
#include <cstdint>

namespace herd::rt {

// Any thread.
uint64_t now_ms() noexcept;

// Converts a duration into a deadline for park_until (saturating), rounded
// up so that it never comes before d has passed.
uint64_t deadline_after(std::chrono::milliseconds d) noexcept;

// Whole milliseconds left until deadline_ms (0 if it has passed).
int64_t ms_until(uint64_t deadline_ms) noexcept;

// Deterministic mode only, any thread: moves the virtual clock forward.
void advance_clock(std::chrono::milliseconds d) noexcept;

// True in the deterministic mode.
bool virtual_time() noexcept;

}  // namespace herd::rt
