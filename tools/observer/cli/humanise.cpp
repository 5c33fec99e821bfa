#include "humanise.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace observer_cli {
namespace {

std::string format(const char* fmt, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, a);
  return buf;
}

}  // namespace

std::string human_bytes(double bytes) {
  if (bytes < 1024) return format("%.0f B", bytes);
  static constexpr const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = bytes / 1024;
  int u = 0;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  return format(v < 10 ? "%.1f " : "%.0f ", v) + units[u];
}

std::string human_count(double n) {
  if (std::fabs(n) < 1000) return format(n == std::floor(n) ? "%.0f" : "%.1f", n);
  static constexpr const char* units[] = {"k", "M", "G", "T"};
  double v = n / 1000;
  int u = 0;
  while (std::fabs(v) >= 1000 && u < 3) {
    v /= 1000;
    ++u;
  }
  return format(std::fabs(v) < 100 ? "%.1f" : "%.0f", v) + units[u];
}

std::string human_duration_ms(double ms) {
  if (ms < 1000) return format("%.0f ms", ms);
  if (ms < 60'000) return format("%.1f s", ms / 1000);
  auto s = static_cast<long long>(ms / 1000);
  char buf[64];
  if (s < 3600)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  else if (s < 86400)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, s % 3600 / 60);
  else
    std::snprintf(buf, sizeof buf, "%lldd%02lldh", s / 86400, s % 86400 / 3600);
  return buf;
}

std::string human_rate(double per_s) { return human_count(per_s) + "/s"; }

std::string human_percent(double fraction) { return format("%.0f%%", fraction * 100); }

std::optional<std::string> normalise_pid(std::string_view text) {
  if (text.size() >= 2 && text.front() == '<' && text.back() == '>') text = text.substr(1, text.size() - 2);
  auto dot = text.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  auto digits = [](std::string_view s) {
    if (s.empty() || s.size() > 10) return false;
    for (char c : s)
      if (c < '0' || c > '9') return false;
    return true;
  };
  if (!digits(text.substr(0, dot)) || !digits(text.substr(dot + 1))) return std::nullopt;
  std::string pid = "<";
  pid.append(text).append(">");
  return pid;
}

std::optional<std::int64_t> parse_integer(std::string_view text, std::int64_t lo, std::int64_t hi) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || v < lo || v > hi) return std::nullopt;
  return v;
}

}  // namespace observer_cli
