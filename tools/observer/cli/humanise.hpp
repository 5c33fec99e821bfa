// Turning the protocol's raw numbers into short human text: sizes ("8.8 KiB"),
// counts ("1.2M"), durations ("1h02m"), rates, and pids as "<i.g>".
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace observer_cli {

std::string human_bytes(double bytes);         // 512 B, 8.8 KiB, 39.1 MiB, 2.0 GiB
std::string human_count(double n);             // 999, 12.3k, 4.5M, 1.2G
std::string human_duration_ms(double ms);      // 25 ms, 4.2 s, 3m05s, 1h02m, 2d03h
std::string human_rate(double per_s);          // human_count + "/s"
std::string human_percent(double fraction);    // 0.934 -> "93%"

// "<5.0>", "5.0" -> "<5.0>"; nullopt when it is not index.generation.
// Accepting the bare form saves quoting '<' and '>' in a shell.
std::optional<std::string> normalise_pid(std::string_view text);

// Parses a whole decimal number in [lo, hi]; nullopt otherwise.
std::optional<std::int64_t> parse_integer(std::string_view text, std::int64_t lo, std::int64_t hi);

}  // namespace observer_cli
